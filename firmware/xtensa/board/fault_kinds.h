/* What raised a fault report: the kinds start.S of each core passes to
 * port_fault() (fault.c). Plain #defines: included from assembly too. */
#ifndef XTBOARD_FAULT_KINDS_H
#define XTBOARD_FAULT_KINDS_H
#define FAULT_DEBUG   1
#define FAULT_NMI     2
#define FAULT_KERNEL  3
#define FAULT_USER    4
#define FAULT_DOUBLE  5
#define FAULT_RETURN  6
#endif
