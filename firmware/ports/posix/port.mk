# The virtual device: the core served over stdio or a pseudo-terminal, with a
# file standing in for the flash partition. Built with the host's compiler;
# `make posix` builds just this. `make posix-signed RVNE_TRUSTED_KEYS=...`
# builds the signed-policy device (docs/format.md "Signed models") into
# build/posix-signed with Debian's mbedtls (libmbedtls-dev).
POSIX_DIR := $(FW)/ports/posix
POSIX_SRC := main.c part_map.c flash_file.c serve.c trust.c
POSIX_CFLAGS := -std=c99 -O2 -g -Wall -Wextra $(CORE_INC) -I$(POSIX_DIR)
POSIX_HDR := $(wildcard $(FW)/core/include/rvne/*.h) $(KERNELS_HDR) $(wildcard $(POSIX_DIR)/*.h)

# $(call posix_variant,NAME,EXTRA_CFLAGS,EXTRA_SOURCES,LIBS): build/NAME/rvne-vdev.
define posix_variant
$(1)_OUT := $(BUILD)/$(1)
$(1)_CORE_OBJ := $$(patsubst $(FW)/core/src/%.c,$$($(1)_OUT)/core/%.o,$(CORE_SRC))
$(1)_PORT_OBJ := $$(addprefix $$($(1)_OUT)/port/,$(POSIX_SRC:.c=.o))
$(1)_EXTRA_OBJ := $$(patsubst $(FW)/core/crypto/%.c,$$($(1)_OUT)/crypto/%.o,$(3))

$$($(1)_CORE_OBJ): $$($(1)_OUT)/core/%.o: $(FW)/core/src/%.c $(POSIX_HDR)
	@mkdir -p $$(dir $$@)
	$$(CC) $(POSIX_CFLAGS) $(2) -c $$< -o $$@

$$($(1)_PORT_OBJ): $$($(1)_OUT)/port/%.o: $(POSIX_DIR)/%.c $(POSIX_HDR) $$($(1)_OUT)/options
	@mkdir -p $$(dir $$@)
	$$(CC) $(POSIX_CFLAGS) $(2) -c $$< -o $$@

$$($(1)_EXTRA_OBJ): $$($(1)_OUT)/crypto/%.o: $(FW)/core/crypto/%.c $(POSIX_HDR)
	@mkdir -p $$(dir $$@)
	$$(CC) $(POSIX_CFLAGS) $(2) -c $$< -o $$@

# The options the objects were built with: a change rebuilds them.
$$($(1)_OUT)/options: FORCE_POSIX_OPTIONS
	@mkdir -p $$(dir $$@)
	@echo '$(2)' | cmp -s - $$@ || echo '$(2)' > $$@

$$($(1)_OUT)/rvne-vdev: $$($(1)_CORE_OBJ) $$($(1)_PORT_OBJ) $$($(1)_EXTRA_OBJ)
	$$(CC) $(POSIX_CFLAGS) $$^ $(4) -lm -o $$@
endef

.PHONY: posix posix-signed FORCE_POSIX_OPTIONS
POSIX_BIN := $(BUILD)/posix/rvne-vdev
all: posix
posix: $(POSIX_BIN)
$(eval $(call posix_variant,posix,,,))

RVNE_TRUSTED_KEYS ?=
RVNE_REVOKED_KEYS ?=
POSIX_SIGNED_FLAGS := -DRVNE_SIGNED -DRVNE_TRUSTED_KEYS='"$(RVNE_TRUSTED_KEYS)"' -DRVNE_REVOKED_KEYS='"$(RVNE_REVOKED_KEYS)"'
posix-signed: $(BUILD)/posix-signed/rvne-vdev
$(eval $(call posix_variant,posix-signed,$(POSIX_SIGNED_FLAGS),$(FW)/core/crypto/rvne_crypto_mbedtls.c,-lmbedcrypto))
