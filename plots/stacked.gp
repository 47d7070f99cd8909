# stacked.gp - per-stage breakdown: one stacked bar per pipeline (and device), one colour per stage.
# Parameters: datafile, out, fmt, title, ylabel, ncols (number of columns including the label column).
# Data file: a header row (label column name, then quoted stage names), then one row per bar:
# "label" value_stage1 value_stage2 ... (0 where a pipeline has no such stage).
if (fmt eq "svg") { set terminal svg size 900,600 dynamic noenhanced font "DejaVu Sans,11" } \
else { set terminal pngcairo size 900,600 noenhanced font "DejaVu Sans,11" }
set output out
set title title
set ylabel ylabel
set grid ytics
set key outside right top
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set xtics rotate by -20
set yrange [0:*]
plot for [i=2:ncols] datafile using i:xtic(1) title columnheader(i)
