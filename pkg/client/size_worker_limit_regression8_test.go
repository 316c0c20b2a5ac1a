package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// payloadServer starts a JetStream server whose max_payload is maxPayload,
// with the streams (defaults), and returns a default client on it and its
// connection.
func payloadServer(t *testing.T, maxPayload int32) (*client.Client, *nats.Conn) {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, MaxPayload: maxPayload}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := streams.Ensure(ctx, js, streams.Config{}.WithDefaults()); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(js, nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c, nc
}

// sizedRequest is a request with invocation id id whose encoding is size
// bytes.
func sizedRequest(t *testing.T, id string, size int) *envelope.Request {
	t.Helper()
	req := request("x")
	req.InvocationID, req.V = id, envelope.Version
	base, err := req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	req.Message.Parts[0].Text = strings.Repeat("x", size-len(base)+1)
	if data, err := req.Encode(); err != nil || len(data) != size {
		t.Fatalf("test setup: %d bytes, want %d (%v)", len(data), size, err)
	}
	return req
}

// Regression (found in review, twenty-fifth session): on a server whose
// max_payload is below 1 MiB (here 256 KiB, an operator's choice), the
// worker refuses as BAD_INPUT a request larger than
// dlq.MaxWholeRequest(max_payload) (max_payload less 9 KiB: a dead letter
// must carry it whole), but client.Check and client.Send compared it only
// with Config.MaxRequestSize (1 MiB less 16 KiB) and with max_payload less
// the headers: a request between the two was stored, then dead-lettered
// with a failed result, instead of the *envelope.InvalidError (exit 2, a
// batch's "invalid") Send returns for every other request the worker
// would refuse. Check and Send now refuse what the worker refuses for
// size on the server, to the byte, and nothing is stored.
func TestSendRefusesARequestLargerThanTheWorkerTakesOnASmallMaxPayload(t *testing.T) {
	c, nc := payloadServer(t, 256<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	workerLimit := dlq.MaxWholeRequest(nc.MaxPayload()) // what the worker decodes with
	size := workerLimit + 4<<10                         // 4 KiB over it, 5 KiB under max_payload
	req := sizedRequest(t, "inv-review8-size", size)
	data, err := req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The worker's own decode of these bytes refuses them.
	if _, err := envelope.DecodeRequest(data, workerLimit); err == nil {
		t.Fatal("test setup: the worker's decode accepts the request")
	}

	var ie *envelope.InvalidError
	if err := c.Check(req); !errors.As(err, &ie) {
		t.Errorf("Check of a %d-byte request on a server with max_payload %d (the worker takes %d) = %v; want an *envelope.InvalidError",
			size, nc.MaxPayload(), workerLimit, err)
	}
	rec, err := c.Send(ctx, req)
	if !errors.As(err, &ie) {
		t.Fatalf("Send of a %d-byte request on a server with max_payload %d (the worker takes %d) = %+v, %v; want an *envelope.InvalidError (it was stored, and the worker will dead-letter it as BAD_INPUT)",
			size, nc.MaxPayload(), workerLimit, rec, err)
	}

	// The edge, to the byte: the worker's limit is sent, one byte more is
	// refused.
	if _, err := c.Send(ctx, sizedRequest(t, "inv-review8-edge", workerLimit)); err != nil {
		t.Fatalf("Send of a request of exactly the worker's limit (%d bytes) = %v", workerLimit, err)
	}
	if _, err := c.Send(ctx, sizedRequest(t, "inv-review8-over", workerLimit+1)); !errors.As(err, &ie) {
		t.Fatalf("Send of a request one byte over the worker's limit (%d bytes) = %v; want an *envelope.InvalidError", workerLimit+1, err)
	}
	if err := c.Check(sizedRequest(t, "inv-review8-over", workerLimit+1)); !errors.As(err, &ie) {
		t.Fatalf("Check of a request one byte over the worker's limit = %v; want an *envelope.InvalidError", err)
	}
}
