/*
 * study.h - what the f3dbench study is, as data for the plotting code (hx_study, harness.h): the pipelines
 * and their headline stages, legends, the serialization-vs-PSH comparison figure, REPORT.md's headline
 * tables with their notes, the pair of pipelines whose peak memory is compared, and the backbones' section
 * (whole-network tables and figures: the paper's table, latency fits, counters, memory, component floors).
 * `f3dbench plot` hands it to hx_plot_sel; harness/plot.c knows no pipeline or stage name.
 */
#ifndef F3D_APP_STUDY_H
#define F3D_APP_STUDY_H

#include "harness/harness.h"

/* The study's tables (app/study.c): static, never NULL. */
const hx_study *f3d_study(void);

#endif /* F3D_APP_STUDY_H */
