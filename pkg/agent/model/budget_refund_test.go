package model_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

func TestCallBudgetRefund(t *testing.T) {
	b := model.NewCallBudget(2)
	_ = b.Charge()
	_ = b.Charge()
	if err := b.Charge(); err == nil {
		t.Fatal("third charge of a budget of 2 accepted")
	}
	b.Refund()
	if b.Used() != 1 {
		t.Fatalf("used %d after a refund, want 1", b.Used())
	}
	if err := b.Charge(); err != nil {
		t.Fatalf("charge after a refund: %v", err)
	}
	b.Refund()
	b.Refund()
	b.Refund() // more refunds than charges: never below zero
	if b.Used() != 0 {
		t.Fatalf("used %d, want 0", b.Used())
	}
	var nilBudget *model.CallBudget
	nilBudget.Refund() // a nil budget is unlimited: a no-op
}
