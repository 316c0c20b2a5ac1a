package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
)

// Two embedded servers on one data dir would write one JetStream store
// from two processes. The second is refused while the first runs; once the
// first is closed, the dir is free again and holds what the first stored.
func TestEmbeddedDataDirIsLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := app.StartEmbedded(config.Embedded{DataDir: dir, Port: -1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := nats.Connect(first.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEPT", Subjects: []string{"kept"}}); err != nil {
		t.Fatal(err)
	}
	nc.Close()

	second, err := app.StartEmbedded(config.Embedded{DataDir: dir, Port: -1}, zerolog.Nop())
	if !errors.Is(err, app.ErrDataDirInUse) {
		if second != nil {
			second.Close()
		}
		t.Fatalf("second embedded server on the same data dir: err %v, want ErrDataDirInUse", err)
	}

	first.Close()
	first.Close() // a second Close is a no-op
	third, err := app.StartEmbedded(config.Embedded{DataDir: dir, Port: -1}, zerolog.Nop())
	if err != nil {
		t.Fatalf("data dir not released by Close: %v", err)
	}
	defer third.Close()
	nc, err = nats.Connect(third.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ = jetstream.New(nc)
	if _, err := js.Stream(ctx, "KEPT"); err != nil {
		t.Fatalf("the stream the first server stored: %v", err)
	}
}
