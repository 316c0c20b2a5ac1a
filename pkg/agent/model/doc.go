// Package model is the contract between the agent loop and a language model:
// the request and response types, the Model interface, the finish-reason
// vocabulary and the typed errors (such as the call-budget error) that the
// classifier in pkg/taxonomy inspects.
//
// It deliberately imports nothing from the agent loop so that classifiers,
// retry decorators and provider adapters can depend on it without cycles.
package model
