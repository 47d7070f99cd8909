# fit.gp - "metric vs input size" with a least-squares line per series: one colour per series, the measured
# points with error bars (mean +- std) solid, the fitted line dashed in the same colour. Written by f3dbench
# plot (harness/plot.c); reads only the data file it is given.
# Parameters (gnuplot -e): datafile, out, fmt ("png"|"svg"), title, ylabel, errors (0|1), nser (the number of
# measured blocks, first in the file), fcols (one word per fitted line, after them: the colour, i.e. the
# index + 1 of its measured block).
# Optional xt, xtl: the sizes drawn and their labels ("100000 200000", "100k 200k"), a tick at each.
# Data file: blocks separated by two blank lines; a block starts with a line of two quoted fields, the full
# series name and the legend (with the fit's slope and R^2), then rows "n_points value error".
if (fmt eq "svg") { set terminal svg size 1000,750 dynamic noenhanced font "DejaVu Sans,11" } \
else { set terminal pngcairo size 1000,750 noenhanced font "DejaVu Sans,11" }
set output out
set title title font ",13"
set xlabel "points per cloud"
set ylabel ylabel
set grid
set key top left Left reverse box opaque font ",10" spacing 1.2 width 1
set format x "%.0s%c"
# times are non-negative: the axis starts at 0, so slopes and intercepts read off the figure
set yrange [0:*]
set offsets graph 0.03, graph 0.03, graph 0.12, 0
set autoscale xfixmin
set autoscale xfixmax
stats datafile using 1 nooutput
# x ticks: with a few sizes (xt, labels xtl, from the harness) a tick at each, so each label is a size drawn and
# is written once (gnuplot's own ticks around one size read "20k 20k 20k"); one size gets a range around it
if (STATS_min == STATS_max) { set xrange [STATS_min * 0.8 : STATS_max * 1.2] }
if (exists("xt") && words(xt) > 0) { set xtics (word(xtl, 1) real(word(xt, 1))) }
if (exists("xt") && words(xt) > 1) { do for [i=2:words(xt)] { set xtics add (word(xtl, i) real(word(xt, i))) } }
if (!exists("fcols")) { fcols = "" }
nfit = words(fcols)
# gnuplot evaluates the body of an empty "for [j=1:0]" once: the fitted lines only where there are some
sty = errors ? "yerrorlines" : "linespoints"
use = errors ? "1:2:3" : "1:2"
if (nfit > 0) {
  plot for [i=0:nser-1] datafile index i using @use with @sty lw 2.2 pt 7 ps 0.9 lc i+1 dt 1 \
         title columnheader(2), \
       for [j=1:nfit] datafile index nser+j-1 using 1:2 with lines lw 1.2 dt 2 lc int(word(fcols, j)) notitle
} else {
  plot for [i=0:nser-1] datafile index i using @use with @sty lw 2.2 pt 7 ps 0.9 lc i+1 dt 1 \
         title columnheader(2)
}
