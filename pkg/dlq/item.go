package dlq

import (
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Item is one message of the DLQ stream as the Reader returns it.
type Item struct {
	// Seq is the message's stream sequence (for Get and Delete).
	Seq uint64
	// Subject is <prefix>.<class>.<agent>.
	Subject string
	// Time is when the server stored the message.
	Time time.Time
	// Header holds the entry headers (HeaderClass, HeaderAgent, ...).
	Header nats.Header
	// Data is the message body as stored.
	Data []byte
	// Entry is the decoded entry; nil when Err is set.
	Entry *Entry
	// Err is the *DecodeError of an entry that cannot be decoded.
	Err error

	// msg is the consumer message of an Item from Fetch (nil from List).
	msg jetstream.Msg
	// delivered is the consumer's delivery count of a fetched Item.
	delivered uint64
}

// NumDelivered is how often the dlq-replayer consumer delivered a fetched
// Item (0 for an Item from List or Get).
func (it *Item) NumDelivered() uint64 { return it.delivered }

// newItem decodes body into an Item, turning a decode failure into Err.
func newItem(seq uint64, subject string, t time.Time, h nats.Header, data []byte) *Item {
	it := &Item{Seq: seq, Subject: subject, Time: t, Header: h, Data: data}
	e, err := DecodeEntry(data)
	if err != nil {
		var de *DecodeError
		if asDecodeError(err, &de) {
			de.Seq, de.Subject = seq, subject
		}
		it.Err = err
		return it
	}
	it.Entry = e
	return it
}
