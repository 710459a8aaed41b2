# ESP32-S3 port, host side only: no ESP32-S3 compiler exists here, so the
# ESP-IDF glue (main/temporal_task.c) is built with the host compiler against
# the ESP-IDF/FreeRTOS test double (tests/esp_double) and its test runs under
# `make test` with the sanitizers of tests/tests.mk. The real build is
# `pio run -e esp32s3` (platformio.ini) or idf.py in this directory.
ESP_DIR := $(FW)/ports/esp32s3
ESP_OUT := $(BUILD)/esp32s3_host
ESP_DOUBLE := $(FW)/tests/esp_double
ESP_TEST_SRC := $(wildcard $(FW)/tests/esp/test_*.c)
ESP_TEST_BIN := $(patsubst $(FW)/tests/esp/%.c,$(ESP_OUT)/%,$(ESP_TEST_SRC))
ESP_CORE_OBJ := $(patsubst $(FW)/core/src/%.c,$(ESP_OUT)/core/%.o,$(CORE_SRC))
ESP_GLUE_OBJ := $(ESP_OUT)/temporal_task.o $(ESP_OUT)/example_producer.o $(ESP_OUT)/esp_double.o $(ESP_OUT)/esp_double_timer.o
ESP_STUBS := $(FW)/tests/esp_idf_stubs
ESP_HDR := $(wildcard $(FW)/core/include/rvne/*.h) $(KERNELS_HDR) $(wildcard $(ESP_DOUBLE)/*.h $(ESP_DOUBLE)/freertos/*.h) \
           $(ESP_DIR)/main/temporal_task.h $(ESP_DIR)/main/example_producer.h $(wildcard $(ESP_STUBS)/*/*.h $(ESP_STUBS)/*/*/*.h)

# app_main.c's ESP-IDF version branches (docs/esp32s3.md): compiled with
# -Werror against headers shaped like each version's (tests/esp_idf_stubs),
# for each console; for the linux target also linked (without
# esp_timer_get_time) and run (tests/esp_linux/test_app_linux.c).
ESP_IDF_SHAPES := 5.1 5.3 6.0
ESP_APP_OBJ := $(foreach v,$(ESP_IDF_SHAPES),$(ESP_OUT)/app/idf-$(v)-uart0.o $(ESP_OUT)/app/idf-$(v)-usj.o)
ESP_APP_OBJ += $(foreach v,$(ESP_IDF_SHAPES),$(ESP_OUT)/app/idf-$(v)-linux.o)
ESP_LINUX_TEST := $(foreach v,$(ESP_IDF_SHAPES),$(ESP_OUT)/app/test_app_linux-idf-$(v))
ESP_LINUX_DEF := -DCONFIG_IDF_TARGET_LINUX=1
# Include dirs of one shape: its own headers, those new in v5.3 for 5.3 on, the common ones.
esp_stub_inc = -I$(ESP_STUBS)/idf-$(1) $(if $(filter 5.1,$(1)),,-I$(ESP_STUBS)/since-5.3) -I$(ESP_STUBS)/common
ESP_LINUX_OBJ := $(ESP_OUT)/linux/temporal_task.o $(ESP_OUT)/example_producer.o $(ESP_OUT)/esp_double.o $(ESP_OUT)/linux/esp_double_linux.o

# Deferred (=): tests/tests.mk is read after this file; its TEST_SAN is the
# one sanitizer set every C test uses. The fallback is the same flags.
ESP_SAN = $(or $(TEST_SAN),-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
ESP_CFLAGS = -std=c99 -O1 -g -Wall -Wextra -Werror $(ESP_SAN) $(CORE_INC) \
             -I$(ESP_DOUBLE) -I$(ESP_DIR)/main -I$(FW)/tests
# Every libc allocation in the test binary is counted (tests/esp: no
# allocation in the push path).
ESP_WRAP := -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc

# The signed policy's branch (menuconfig RVNE_SIGNED_MODELS, docs/format.md
# "Signed models"): compiled with -Werror against the double, not linked
# (ESP-IDF's Mbed TLS is not here; the virtual device runs the same core).
ESP_SIGNED_OBJ := $(ESP_OUT)/signed/temporal_task.o
ESP_SIGNED_DEF := -DCONFIG_RVNE_SIGNED_MODELS=1 -DCONFIG_RVNE_TRUSTED_KEYS='""' -DCONFIG_RVNE_REVOKED_KEYS='""'

.PHONY: esp32s3-host-test
all: $(ESP_TEST_BIN) $(ESP_APP_OBJ) $(ESP_LINUX_TEST) $(ESP_SIGNED_OBJ)
test: esp32s3-host-test
esp32s3-host-test: $(ESP_TEST_BIN) $(ESP_APP_OBJ) $(ESP_LINUX_TEST) $(ESP_SIGNED_OBJ)
	@set -e; for t in $(ESP_TEST_BIN) $(ESP_LINUX_TEST); do $$t $(ESP_OUT); done

$(ESP_OUT)/app/idf-%-uart0.o: $(ESP_DIR)/main/app_main.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) $(call esp_stub_inc,$*) -c $< -o $@

$(ESP_OUT)/app/idf-%-usj.o: $(ESP_DIR)/main/app_main.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) -DCONFIG_RVNE_CONSOLE_USB_SERIAL_JTAG=1 $(call esp_stub_inc,$*) -c $< -o $@

$(ESP_OUT)/app/idf-%-linux.o: $(ESP_DIR)/main/app_main.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) $(ESP_LINUX_DEF) $(call esp_stub_inc,$*) -c $< -o $@

$(ESP_SIGNED_OBJ): $(ESP_DIR)/main/temporal_task.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) $(ESP_SIGNED_DEF) -c $< -o $@

$(ESP_OUT)/linux/temporal_task.o: $(ESP_DIR)/main/temporal_task.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) $(ESP_LINUX_DEF) -c $< -o $@

$(ESP_OUT)/linux/esp_double_linux.o: $(ESP_DOUBLE)/esp_double_linux.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) -I$(ESP_STUBS)/common -c $< -o $@

$(ESP_OUT)/app/test_app_linux-idf-%: $(FW)/tests/esp_linux/test_app_linux.c $(FW)/tests/check.h \
		$(ESP_OUT)/app/idf-%-linux.o $(ESP_LINUX_OBJ) $(ESP_CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) $(ESP_LINUX_DEF) -I$(ESP_STUBS)/common $< $(ESP_OUT)/app/idf-$*-linux.o \
		$(ESP_LINUX_OBJ) $(ESP_CORE_OBJ) -lm -o $@

$(ESP_CORE_OBJ): $(ESP_OUT)/core/%.o: $(FW)/core/src/%.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) -c $< -o $@

$(ESP_OUT)/temporal_task.o $(ESP_OUT)/example_producer.o: $(ESP_OUT)/%.o: $(ESP_DIR)/main/%.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) -c $< -o $@

$(ESP_OUT)/esp_double.o $(ESP_OUT)/esp_double_timer.o: $(ESP_OUT)/%.o: $(ESP_DOUBLE)/%.c $(ESP_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) -c $< -o $@

$(ESP_TEST_BIN): $(ESP_OUT)/%: $(FW)/tests/esp/%.c $(FW)/tests/check.h $(ESP_GLUE_OBJ) $(ESP_CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ESP_CFLAGS) $< $(ESP_GLUE_OBJ) $(ESP_CORE_OBJ) $(ESP_WRAP) -lm -o $@

# The real app for Espressif's QEMU (ESP-IDF's own build): `make esp32s3-qemu`.
include $(ESP_DIR)/idf.mk
