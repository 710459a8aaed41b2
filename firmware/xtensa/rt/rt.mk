# The lx106 runtime for Debian libgcc's gaps (see rvne_rt.h). Variables only,
# so any fragment may include it.
#   RT_SRC       portable C: link it into the lx106 firmware, and the host
#                unit test (firmware/tests/test_softfloat.c) links it too
#   RT_LX106_SRC the libgcc names over RT_SRC: lx106 builds only
#   RT_FPU_SRC   divsf3 and sqrt: the esp32-class port (ports/lx6) only
#   RT_INC       -I for rvne_rt.h
#   RT_CFLAGS    what the runtime must be built with on either side
ifndef RT_MK_INCLUDED
RT_MK_INCLUDED := 1
RT_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
RT_SRC := $(RT_DIR)/sf_addsub.c $(RT_DIR)/sf_mul.c $(RT_DIR)/sf_int.c \
          $(RT_DIR)/sf_widen.c $(RT_DIR)/int_div32.c $(RT_DIR)/int_mul_div64.c
RT_LX106_SRC := $(RT_DIR)/lx106_abi.c
# Division and square root for cores with an FPU that lacks them (the
# esp32-class port links these; lx106 takes libgcc's __divsf3). Portable
# too: the host unit test checks them with the rest.
RT_FPU_SRC := $(RT_DIR)/sf_div.c $(RT_DIR)/sf_sqrt.c
# binary64 arithmetic: the esp32-class port's unit tests (test_head's
# tolerance is computed in double); host-tested with the rest.
RT_DF_SRC := $(RT_DIR)/df_arith.c
RT_HDR := $(RT_DIR)/rvne_rt.h $(RT_DIR)/rt_sf.h $(RT_DIR)/rt_bits.h
RT_INC := -I$(RT_DIR)
# Integer-only code; no flag may turn it into float or library calls.
RT_CFLAGS := -std=c99 -ffp-contract=off -fno-fast-math
endif
