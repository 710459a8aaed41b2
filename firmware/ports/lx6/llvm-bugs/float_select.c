/* llc-22 -mcpu=esp32: "Cannot select: TargetConstantPool" on a select
 * between two float constants. */
float pick(float x) { return x < 0.0f ? -0.5f : 0.5f; }
