/* What the shared board code (../../xtensa/board) needs to know about this
 * core: its name in the banner and INFO, and where the lx60 board maps the
 * flash when it runs an lx106 (docs/targets.md). */
#ifndef BOARD_CORE_H
#define BOARD_CORE_H
#define BOARD_CORE "lx106"
#define BOARD_CORE_DESC "Xtensa LX106 core (call0 ABI, no FPU: soft-float runtime), gcc"
#define BOARD_FLASH_MAP 0x50000000u
#endif
