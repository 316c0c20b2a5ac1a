// Package support is the order-support agent from the ADK error-recovery
// seed: a read tool get_order(order_id), a write tool
// refund_order(order_id, amount_cents, reason), and the orders service they
// talk to. The worker ships it as the demo agent "support"; tests and the
// demo use the in-memory orders service. Order ids look like "A-1042".
package support
