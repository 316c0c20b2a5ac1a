// Package agent runs one agent invocation: the loop of model calls and tool
// calls, with the failure semantics of ADK Java carried over to Go.
//
// A Runner appends every event to the session before yielding it (a model
// response that asks for tools before they run; the user message and a tool
// step's function responses in the same write as the next model response,
// or at the end; see Runner.Run), counts
// model calls against the agent's budget, runs callbacks (plugins first, then
// the agent's own) around each model and tool call, turns tool failures the
// model can act on into small sanitised error maps, and ends the invocation
// with a Go error for failures it cannot act on. Running an invocation id
// that already has events resumes it instead of starting over.
//
// The model contract lives in package model, tools in package tool and
// sessions in package session, so that classifiers and providers can import
// them without importing the loop.
package agent
