# The board code both emulated Xtensa cores share (QEMU's lx60 board: 16550
# UART, flash-image boot stub, model partitions through the core's table reader, banner,
# serve loop, fault report). Variables only: each core's port.mk includes it
# and compiles these with its own compiler and board_core.h.
#   XTB_DIR   this directory (-I it)
#   XTB_SRC   C sources (file names relative to XTB_DIR)
#   XTB_BOOT  the boot stub (needs -DAPP_ENTRY=<flash mapping + 0x10000>)
#   XTB_HDR   headers the sources depend on
ifndef XTB_MK_INCLUDED
XTB_MK_INCLUDED := 1
XTB_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
XTB_SRC := board.c uart16550.c cycles.c fault.c
XTB_BOOT := $(XTB_DIR)/boot.S
XTB_HDR := $(wildcard $(XTB_DIR)/*.h)
# The app partition's offset in flash (partitions.csv's factory row).
XTB_APP_OFFSET := 0x10000
# The flash driver (cfi_flash.h); cfi_cmd.o is linked into RAM by name.
XTB_SRC += cfi_flash.c cfi_cmd.c
endif
