# Test builds of the virtual device, each with one deliberate defect compiled
# into the core (RVNE_DEFECT_* in rvne_head.c and fp16.h): the verdict of
# docs/model.md must fail every one (tests/test_defects.py builds them with
# `make defects`). Not part of `all`.
DEFECTS := window_short kv_map no_residual stale_slot fp16_ftz
DEFECT_DIR := $(BUILD)/defects
DEFECT_BINS := $(foreach d,$(DEFECTS),$(DEFECT_DIR)/$(d)/rvne-vdev)
DEFECT_SRC := $(CORE_SRC) $(addprefix $(POSIX_DIR)/,$(POSIX_SRC))

.PHONY: defects
defects: $(DEFECT_BINS)

$(DEFECT_DIR)/%/rvne-vdev: $(DEFECT_SRC) $(POSIX_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(POSIX_CFLAGS) -DRVNE_DEFECT_$(shell echo $* | tr a-z A-Z) $(DEFECT_SRC) -lm -o $@
