# The ESP-IDF app built for the ESP32-S3 as Espressif's QEMU runs it
# (target qemu-esp32s3, docs/targets.md): `make -C firmware esp32s3-qemu`
# writes $(BUILD)/esp32s3-qemu/flash.img, an 8 MiB image with the bootloader,
# partition table and app where the build's flash_args puts them (erased
# `rvne` partition), and keeps ESP-IDF's build directory in .../idf (what
# pytest-embedded-idf reads). Needs what ESP-IDF's export.sh leaves: IDF_PATH,
# xtensa-esp32s3-elf-gcc on PATH, and ESP-IDF's Python environment
# (IDF_PYTHON_ENV_PATH, or `python` on PATH; IDF_PYTHON overrides both).
# Not part of `all`: hosts without ESP-IDF build everything else.
ESP_QEMU_OUT := $(BUILD)/esp32s3-qemu
ESP_QEMU_IDF := $(ESP_QEMU_OUT)/idf
IDF_PYTHON ?= $(if $(IDF_PYTHON_ENV_PATH),$(IDF_PYTHON_ENV_PATH)/bin/python,python)
# Every file the app is built from; an idf.py build directory inside the
# port (someone ran idf.py there by hand) is not a source.
ESP_QEMU_SRC := $(shell find $(FW)/core $(FW)/ports/esp32s3 $(FW)/kernels -path $(FW)/ports/esp32s3/build -prune \
                  -o -type f -print) $(wildcard $(FW)/../partitions.csv $(FW)/../sdkconfig.defaults)
# The trimmed ESP-IDF this project is tested with takes a GCC 12.2 whose
# version string is not Espressif's (IDF_MAINTAINER) and has no constraints
# file from install.sh; the app needs no managed components.
ESP_QEMU_ENV := IDF_TARGET=esp32s3 IDF_MAINTAINER=1 IDF_PYTHON_CHECK_CONSTRAINTS=no IDF_COMPONENT_MANAGER=0

.PHONY: esp32s3-qemu
esp32s3-qemu: $(ESP_QEMU_OUT)/flash.img

$(ESP_QEMU_OUT)/flash.img: $(ESP_QEMU_SRC)
	@test -n "$(IDF_PATH)" || { echo "esp32s3-qemu: IDF_PATH is not set: install ESP-IDF v5.1 or later and source its export.sh"; exit 1; }
	@mkdir -p $(ESP_QEMU_IDF)
	@# The configuration comes from the defaults and sdkconfig.qemu alone,
	@# never from a stale generated sdkconfig.
	rm -f $(ESP_QEMU_IDF)/sdkconfig
	$(ESP_QEMU_ENV) $(IDF_PYTHON) $(IDF_PATH)/tools/idf.py -C $(FW)/ports/esp32s3 -B $(ESP_QEMU_IDF) \
		-D SDKCONFIG=$(ESP_QEMU_IDF)/sdkconfig -D SDKCONFIG_DEFAULTS=$(FW)/ports/esp32s3/sdkconfig.qemu build
	cd $(ESP_QEMU_IDF) && $(IDF_PYTHON) -m esptool --chip esp32s3 merge_bin --fill-flash-size 8MB \
		-o $(ESP_QEMU_OUT)/flash.img.tmp @flash_args
	mv $(ESP_QEMU_OUT)/flash.img.tmp $@
