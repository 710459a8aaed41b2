"""Flash: partition tables (partition), the model slots (slots), the
emulated boards' flash image (image, also `python -m rvne.flash.image` for
the firmware build; docs/flash-layout.md) and writing a real board through
esptool (board; docs/esp32s3.md). Imports link and below."""
