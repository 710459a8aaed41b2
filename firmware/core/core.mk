# The portable core: the same sources for every target. Ports add CFLAGS.
CORE_SRC := $(wildcard $(FW)/core/src/*.c)
# The kernels' declarations (rvne/kernels.h includes them) lie by operation
# in firmware/kernels/.
CORE_INC := -I$(FW)/core/include -I$(FW)/kernels
