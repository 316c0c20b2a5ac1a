package dlq

// fileStoreRecordLimit is the largest record a JetStream file store (the
// streams' default storage, and always the parked stream's) writes:
// nats-server's rlBadThresh, 32 MiB. The record of a message is 22 bytes
// (length, sequence, time, subject length), the subject, 4 bytes of header
// length, the header block, the body and an 8-byte hash (the server's
// fileStoreMsgSize); a larger one is refused with JetStream error 10077,
// "message too large", whatever the server's max_payload (which may be up
// to 64 MiB, or more with a larger max_pending).
const fileStoreRecordLimit = 32 << 20

// storedRecordReserve is what MaxStoredEntry leaves of fileStoreRecordLimit
// for the rest of the record: its 34 bytes of framing, the subject
// (<prefix>.<class>.<agent>, a few hundred bytes) and the header block (the
// entry headers with Nats-Msg-Id and Nats-Expected-Stream, under 1 KiB; a
// parked copy's headers a few hundred bytes more), with a wide margin (a
// clustered stream's Raft log frames the same message in about 100 bytes
// more).
const storedRecordReserve = 16 << 10

// MaxStoredEntry is the largest entry the Publisher writes (EncodeToFit
// never makes a larger one, whatever its limit): what a file store takes,
// 32 MiB, less room for the subject, the headers and the record's framing.
// A larger entry would be refused by the DLQ stream (error 10077), and a
// worker that cannot dead-letter a message Naks it for ever. It applies
// whatever the stream's storage: the Publisher does not know it (it would
// take a stream info per entry), a parked copy always goes to a file store,
// and it costs nothing on a server whose max_payload is below 32 MiB (the
// default is 1 MiB).
const MaxStoredEntry = fileStoreRecordLimit - storedRecordReserve
