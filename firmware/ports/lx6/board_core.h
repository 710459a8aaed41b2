/* What the shared board code (../../xtensa/board) needs to know about this
 * core: its name in the banner and INFO, and where the lx60 board maps the
 * flash when it runs a de233_fpu core (docs/targets.md). */
#ifndef BOARD_CORE_H
#define BOARD_CORE_H
#define BOARD_CORE "lx6"
#define BOARD_CORE_DESC "code for the ESP32's Xtensa LX6 (windowed ABI, FPU), clang/llc-22, on QEMU de233_fpu"
#define BOARD_FLASH_MAP 0xfe000000u
#endif
