"""Topics as the broker sees them: their configs parsed and defaulted, and the policy on what clients may do to them."""
