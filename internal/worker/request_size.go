package worker

import "github.com/agentfleet/agentfleet/pkg/dlq"

// maxRequestBytes is the request size limit: Config.MaxRequestBytes, or
// less when the server's max_payload leaves a dead letter less room
// (dlq.MaxWholeRequest): a larger request would be dead-lettered cut, and
// a cut request can never be replayed, so it is refused up front.
func (w *Worker) maxRequestBytes() int {
	limit := w.cfg.MaxRequestBytes
	if nc := w.deps.JS.Conn(); nc != nil && nc.MaxPayload() > 0 {
		if whole := dlq.MaxWholeRequest(nc.MaxPayload()); whole > 0 && whole < limit {
			limit = whole
		}
	}
	return limit
}
