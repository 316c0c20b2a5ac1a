package dlq

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// EncodeToFit encodes e in at most limit bytes, and never in more than
// MaxStoredEntry, what a file store takes (limit <= 0: MaxStoredEntry). It
// first bounds ToolsCompleted (its last names within MaxToolsCompletedSize, the
// others counted in ToolsCompletedOmitted), whatever the limit. When e
// still does not fit it keeps only a prefix of the request: RequestRaw,
// RequestTruncated, and RequestSHA256 of the whole request (an entry cut
// before keeps its digest and RequestSize, and is cut further). It fails
// when e does not fit even without its request. The Publisher uses it with
// the connection's max payload less its headers' room, and so must anything
// that publishes a changed copy of an entry (the replayer's park).
func (e *Entry) EncodeToFit(limit int) ([]byte, error) {
	if limit <= 0 || limit > MaxStoredEntry {
		limit = MaxStoredEntry
	}
	e.boundToolsCompleted()
	data, err := e.Encode()
	if err != nil {
		return nil, fmt.Errorf("dlq: encode entry: %w", err)
	}
	if len(data) <= limit {
		return data, nil
	}
	orig := e.OriginalRequest()
	if !e.RequestTruncated {
		sum := sha256.Sum256(orig)
		e.RequestTruncated, e.RequestSHA256 = true, hex.EncodeToString(sum[:])
	}
	e.Request, e.RequestRaw = nil, nil
	base, err := e.Encode()
	if err != nil {
		return nil, fmt.Errorf("dlq: encode entry: %w", err)
	}
	// base64 turns 3 bytes into 4; keep a margin for the field name.
	room := (limit-len(base)-64)/4*3 - 3
	if room <= 0 {
		return nil, errors.New("dlq: entry does not fit the max payload even without its request")
	}
	e.RequestRaw = orig[:min(room, len(orig))]
	data, err = e.Encode()
	if err != nil {
		return nil, fmt.Errorf("dlq: encode entry: %w", err)
	}
	return data, nil
}
