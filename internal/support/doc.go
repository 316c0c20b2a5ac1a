// Package support is the order-support agent from the ADK error-recovery
// seed: a read tool get_order(order_id), a write tool
// refund_order(order_id, amount_cents, reason), and the orders service they
// talk to. The worker ships it as the demo agent "support"; the demo and
// every worker book refunds as durable effects through NATSOrders (the
// DEMO_REFUNDS bucket, NATS-only and embedded deployments) or RedisOrders
// (the demo:refunds list), and only tests use the in-memory MemoryOrders.
// Order ids look like "A-1042".
package support
