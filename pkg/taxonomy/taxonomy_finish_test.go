package taxonomy_test

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/providers/gemini"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-first session): Gemini's
// IMAGE_PROHIBITED_CONTENT and IMAGE_RECITATION finish reasons are
// OUTPUT_BLOCKED, refused like IMAGE_SAFETY, and not UNKNOWN.
//
// The pinned Gemini SDK (google.golang.org/genai v1.77) names
// IMAGE_PROHIBITED_CONTENT and IMAGE_RECITATION beside IMAGE_SAFETY: the
// image-output forms of PROHIBITED_CONTENT, RECITATION and SAFETY, all of
// which ClassifyResponse files OUTPUT_BLOCKED (a refusal is substituted, the
// policy view counts it, nothing is dead-lettered). The gemini adapter
// passes them through unchanged, and ClassifyResponse filed them UNKNOWN: no
// refusal, counted against availability, and the invocation dead-lettered
// "for review", although the provider said exactly what happened (a policy
// outcome, the seed's trust-and-safety queue, not the reliability
// dashboard).
func TestImageFilterFinishReasonsAreOutputBlocked(t *testing.T) {
	for _, fr := range []genai.FinishReason{
		genai.FinishReasonImageProhibitedContent,
		genai.FinishReasonImageRecitation,
	} {
		t.Run(string(fr), func(t *testing.T) {
			// A real SDK response (no parts: the image was withheld),
			// through the real adapter.
			resp := gemini.FromGenAI(&genai.GenerateContentResponse{
				Candidates: []*genai.Candidate{{FinishReason: fr, FinishMessage: "withheld"}},
			})
			got, failed := taxonomy.ClassifyResponse(resp)
			if !failed || got != taxonomy.OutputBlocked {
				t.Errorf("ClassifyResponse(finish %s) = (%q, %v), want OUTPUT_BLOCKED like %s", fr, got, failed, genai.FinishReasonImageSafety)
			}
			repl, err := taxonomy.AfterModel(taxonomy.CallbackOptions{})(context.Background(), nil, resp)
			if err != nil || repl == nil || repl.Content.Text() != taxonomy.DefaultRefusal {
				t.Errorf("AfterModel(finish %s) substituted %+v (err %v), want the refusal", fr, repl, err)
			}
		})
	}
}
