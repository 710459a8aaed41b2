"""The model contract and its ground truth (docs/model.md): the weight layout
(contract), the agreement rule (agreement), the numpy FP32 reference
(reference), the float64 reference and its error bound (bounds), the
verdict `rvne check` applies (verdict) and the step-by-step rule (steps).
Imports nothing of rvne but errors and numbers."""
