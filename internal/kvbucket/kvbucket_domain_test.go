package kvbucket_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
)

// startDomainServer starts an embedded JetStream server in JetStream domain
// domain; with hub set it is a leaf node of hub.
func startDomainServer(t *testing.T, domain string, hubLeafPort int) (*server.Server, int) {
	t.Helper()
	opts := &server.Options{
		ServerName: domain, Host: "127.0.0.1", Port: -1,
		JetStream: true, JetStreamDomain: domain, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	}
	port := 0
	if hubLeafPort == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		opts.LeafNode.Host, opts.LeafNode.Port = "127.0.0.1", port
	} else {
		u, err := url.Parse(fmt.Sprintf("nats://127.0.0.1:%d", hubLeafPort))
		if err != nil {
			t.Fatal(err)
		}
		opts.LeafNode.Remotes = []*server.RemoteLeafOpts{{URLs: []*url.URL{u}}}
	}
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
	return s, port
}

// Regression (found in review, twenty-second session): LeaderGet sends its
// request to the JetStream domain's API ("$JS.<domain>.API.") when js has
// a domain and no API prefix. A JetStream made with
// jetstream.NewWithDomain (a client on a leaf node using the hub's
// JetStream) keeps its API prefix in an unexported field; Options().APIPrefix
// is empty, so LeaderGet fell back to $JS.API. and asked the leaf's own
// JetStream, which had no such bucket, while KeyValue.Get on the same js
// read the entry.
func TestLeaderGetFollowsTheJetStreamDomain(t *testing.T) {
	hub, port := startDomainServer(t, "hub", 0)
	leaf, _ := startDomainServer(t, "leaf", port)
	deadline := time.Now().Add(10 * time.Second)
	for leaf.NumLeafNodes() == 0 || hub.NumLeafNodes() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("leaf node did not connect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	nc, err := nats.Connect(leaf.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.NewWithDomain(nc, "hub")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var kv jetstream.KeyValue
	for {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "DOMAIN_LG", History: 1})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond) // the hub's JetStream becomes reachable through the leaf
	}
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(ctx, "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := kv.Get(ctx, "k"); err != nil || got.Revision() != rev {
		t.Fatalf("KeyValue.Get: %v", err)
	}
	e, err := kvbucket.LeaderGet(ctx, js, "DOMAIN_LG", "k")
	if err != nil {
		t.Fatalf("LeaderGet on a domain JetStream: %v (KeyValue.Get read revision %d)", err, rev)
	}
	if string(e.Value()) != "v" || e.Revision() != rev {
		t.Fatalf("LeaderGet read %q rev %d, want %q rev %d", e.Value(), e.Revision(), "v", rev)
	}
}
