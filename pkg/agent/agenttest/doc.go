// Package agenttest helps test agents: a scripted fake model that answers
// each call from a queue of responses and errors and records the requests it
// saw, builders for common responses, and assertions on events. It fakes
// only the model; tests still run the real agent loop.
package agenttest
