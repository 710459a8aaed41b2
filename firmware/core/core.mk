# The portable core: the same sources for every target. Ports add CFLAGS.
CORE_SRC := $(wildcard $(FW)/core/src/*.c)
CORE_INC := -I$(FW)/core/include
