# The virtual device: the core served over stdio or a pseudo-terminal, with a
# file standing in for the flash partition. Built with the host's compiler;
# `make posix` builds just this.
POSIX_DIR := $(FW)/ports/posix
POSIX_OUT := $(BUILD)/posix
POSIX_BIN := $(POSIX_OUT)/rvne-vdev
POSIX_SRC := main.c part_map.c flash_file.c serve.c
POSIX_CFLAGS := -std=c99 -O2 -g -Wall -Wextra $(CORE_INC) -I$(POSIX_DIR)
POSIX_CORE_OBJ := $(patsubst $(FW)/core/src/%.c,$(POSIX_OUT)/core/%.o,$(CORE_SRC))
POSIX_PORT_OBJ := $(addprefix $(POSIX_OUT)/port/,$(POSIX_SRC:.c=.o))
POSIX_HDR := $(wildcard $(FW)/core/include/rvne/*.h) $(KERNELS_HDR) $(wildcard $(POSIX_DIR)/*.h)

.PHONY: posix
all: posix
posix: $(POSIX_BIN)

$(POSIX_CORE_OBJ): $(POSIX_OUT)/core/%.o: $(FW)/core/src/%.c $(POSIX_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(POSIX_CFLAGS) -c $< -o $@

$(POSIX_PORT_OBJ): $(POSIX_OUT)/port/%.o: $(POSIX_DIR)/%.c $(POSIX_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(POSIX_CFLAGS) -c $< -o $@

$(POSIX_BIN): $(POSIX_CORE_OBJ) $(POSIX_PORT_OBJ)
	$(CC) $(POSIX_CFLAGS) $^ -lm -o $@
