package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  client.Config
		want string // "" valid; else a piece of the error
	}{
		{"defaults", client.Config{}, ""},
		{"own names", client.Config{RequestsStream: "REQ_EU", ResultsStream: "RES_EU", RequestPrefix: "eu.requests", ResultPrefix: "eu.results"}, ""},
		{"wildcard result prefix", client.Config{ResultPrefix: "agent.*"}, "ResultPrefix"},
		{"tail wildcard request prefix", client.Config{RequestPrefix: "agent.>"}, "RequestPrefix"},
		{"empty token", client.Config{ResultPrefix: "agent..results"}, "empty token"},
		{"trailing dot", client.Config{RequestPrefix: "agent.requests."}, "empty token"},
		{"space in prefix", client.Config{RequestPrefix: "agent requests"}, "white space"},
		{"dot in stream name", client.Config{ResultsStream: "AGENT.RESULTS"}, "ResultsStream"},
		{"slash in stream name", client.Config{RequestsStream: "A/B"}, "RequestsStream"},
		{"long stream name", client.Config{ResultsStream: strings.Repeat("R", 65)}, "longer than 64"},
		{"one stream for both", client.Config{RequestsStream: "S", ResultsStream: "S"}, "same stream"},
		{"same prefix", client.Config{RequestPrefix: "agent.x", ResultPrefix: "agent.x"}, "overlaps"},
		{"results under requests", client.Config{RequestPrefix: "agent", ResultPrefix: "agent.results"}, "overlaps"},
		{"requests under results", client.Config{RequestPrefix: "res.requests", ResultPrefix: "res"}, "overlaps"},
		{"shared start is no overlap", client.Config{RequestPrefix: "agent.req", ResultPrefix: "agent.requests"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.WithDefaults().Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, client.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig naming %q", err, tc.want)
			}
		})
	}
}

func TestNewRefusesAnInvalidConfig(t *testing.T) {
	tg := streamstest.Embedded(t)
	if _, err := client.New(tg.JS, tg.NC, client.Config{ResultPrefix: "agent.results.*"}); !errors.Is(err, client.ErrInvalidConfig) {
		t.Fatalf("New = %v, want ErrInvalidConfig", err)
	}
}
