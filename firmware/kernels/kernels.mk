# The kernels by operation, as esp-dsp lays them out (docs/targets.md,
# "Kernels"): firmware/kernels/<op>/ holds every core's assembly for that
# operation (NAME_ae32.S: the esp32-class FPU cores, NAME_aes3.S: the
# ESP32-S3's EE.* block loads, NAME_mac16.S: the LX6's MAC16, NAME_lx6.S:
# the LX6's integer instructions) beside the twin tests (ktest_*.c) that
# hold each to its C twin in rvne/kernels.h; dsp.h and aes3.h are the
# assembler helpers, kernels_ae32.c the C drivers, test_dsp.c the FP32
# twin test. Each port picks the variants for its core in its own build
# file, by file name, through kernel_src.
KERNELS_DIR := $(FW)/kernels
KERNELS_INC := -I$(KERNELS_DIR)
KERNELS_HDR := $(wildcard $(KERNELS_DIR)/*.h $(KERNELS_DIR)/*/*.h)
# The op/NAME (no suffix) of each variant file NAME.S, in the order named.
kernel_src = $(foreach k,$(1),$(patsubst $(KERNELS_DIR)/%.S,%,$(wildcard $(KERNELS_DIR)/*/$(k).S)))
