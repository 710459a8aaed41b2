# Test builds of the virtual device (tests/test_defects.py and
# tools/bench_verdict.py build them with `make defects`; not part of `all`).
# Defects: one deliberate defect compiled into the core (RVNE_DEFECT_* in
# rvne_head.c, rvne_kernels.c and fp16.h); the verdict of docs/model.md must
# fail every one. Variants: another correct implementation
# (RVNE_VARIANT_*: tests/variants/kernels.c and kernels_i8.c in place of the
# core's C kernels, or tests/variants/ftz.c beside them); the verdict must
# pass every one. The i8_ ones act on int8 blobs only (window_short and
# reset_ring on both dtypes, reversed too); i8_exp_copy is the core with its
# int8 exp tables copied at load.
DEFECTS := window_short kv_map no_residual stale_slot fp16_ftz \
           logits_fp16 acts_fp16 exp_err scale_off reset_ring v_fp16_full \
           i8_acc16 i8_half_up i8_rq_neighbour i8_no_sat i8_exp_shift
VARIANTS := reversed fma double online ftz i8_exp_copy
DEFECT_DIR := $(BUILD)/defects
VARIANT_DIR := $(BUILD)/variants
DEFECT_BINS := $(foreach d,$(DEFECTS),$(DEFECT_DIR)/$(d)/rvne-vdev)
VARIANT_BINS := $(foreach d,$(VARIANTS),$(VARIANT_DIR)/$(d)/rvne-vdev)
DEFECT_SRC := $(CORE_SRC) $(addprefix $(POSIX_DIR)/,$(POSIX_SRC))
VARIANT_KERNELS := $(FW)/tests/variants/kernels.c $(FW)/tests/variants/kernels_i8.c
upper = $(shell echo $(1) | tr a-z A-Z)

.PHONY: defects
defects: $(DEFECT_BINS) $(VARIANT_BINS)

$(DEFECT_DIR)/%/rvne-vdev: $(DEFECT_SRC) $(POSIX_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(POSIX_CFLAGS) -DRVNE_DEFECT_$(call upper,$*) $(DEFECT_SRC) -lm -o $@

$(VARIANT_DIR)/ftz/rvne-vdev: $(DEFECT_SRC) $(POSIX_HDR) $(FW)/tests/variants/ftz.c
	@mkdir -p $(dir $@)
	$(CC) $(POSIX_CFLAGS) $(DEFECT_SRC) $(FW)/tests/variants/ftz.c -lm -o $@

$(VARIANT_DIR)/i8_exp_copy/rvne-vdev: $(DEFECT_SRC) $(POSIX_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(POSIX_CFLAGS) -DRVNE_VARIANT_I8_EXP_COPY $(DEFECT_SRC) -lm -o $@

$(VARIANT_DIR)/%/rvne-vdev: $(DEFECT_SRC) $(POSIX_HDR) $(VARIANT_KERNELS)
	@mkdir -p $(dir $@)
	$(CC) $(POSIX_CFLAGS) -DRVNE_VARIANT_$(call upper,$*) $(filter-out %/rvne_kernels.c,$(DEFECT_SRC)) \
		$(VARIANT_KERNELS) -lm -o $@
