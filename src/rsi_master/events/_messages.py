"""Typed agent messages (Recipe, Finding, Recommendation = Continue | Combine | Revise | Stop,
Verdict), nested in the payloads of `worker.finalize` and `review.submit`. Reserved for helper
h-msgs; empty until then."""
