/*
 * The masked-time measurement build of the demo (make masked: tracer_demo_masked.elf), included
 * into every source file (-include). Each masked section of the trc library reads SysTick's
 * current value right after masking interrupts and again right before unmasking, and keeps the
 * longest span per section kind (enum trc_masked_site). Run under QEMU -icount shift=5, where an
 * instruction takes 32 ns of emulated time and the 32 MHz SysTick advances 1.024 ticks per
 * instruction, so ticks count instructions (docs/firmware.md has the figures).
 */
#ifndef DEMO_MASKED_H
#define DEMO_MASKED_H

#include <stdint.h>

#define DEMO_SYST_CVR (*(volatile uint32_t *)0xE000E018u)

void masked_note(uint32_t site, uint32_t begin, uint32_t end);

#define TRC_MASKED_PROBE_BEGIN() DEMO_SYST_CVR
#define TRC_MASKED_PROBE_END(site, begin) masked_note((site), (begin), DEMO_SYST_CVR)

/* Drops records on purpose (a full ring), measures an empty section (the probe's own span) and
 * prints every site's longest span. */
void masked_report(void);

#endif
