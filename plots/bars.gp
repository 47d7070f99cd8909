# bars.gp - a breakdown: one stacked bar per model (and device), one colour per component from a palette of
# 16 distinct colours (gnuplot's default repeats after 8), the bar's total written above it.
# Parameters: datafile, out, fmt, title, ylabel, ncols (the label column and the components).
# Data file: a header row ("bar", quoted component names, "total"), then one row per bar:
# "label" value_1 ... value_k total (0 where a bar has no such component).
if (fmt eq "svg") { set terminal svg size 1000,650 dynamic noenhanced font "DejaVu Sans,11" } \
else { set terminal pngcairo size 1000,650 noenhanced font "DejaVu Sans,11" }
set output out
set title title font ",13"
set ylabel ylabel
set grid ytics
set key outside right top invert font ",10"
set style data histograms
set style histogram rowstacked
set style fill solid 0.9 border rgb "white"
set boxwidth 0.55
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
# bar names such as "flash3d-46m-windows 600k" overlap side by side: slanted, ending under their bar
set xtics rotate by 25 right nomirror
set bmargin 7
set linetype 1 lc rgb "#4e79a7"
set linetype 2 lc rgb "#f28e2b"
set linetype 3 lc rgb "#e15759"
set linetype 4 lc rgb "#76b7b2"
set linetype 5 lc rgb "#59a14f"
set linetype 6 lc rgb "#edc948"
set linetype 7 lc rgb "#b07aa1"
set linetype 8 lc rgb "#ff9da7"
set linetype 9 lc rgb "#9c755f"
set linetype 10 lc rgb "#bab0ac"
set linetype 11 lc rgb "#1f3b73"
set linetype 12 lc rgb "#8cd17d"
set linetype 13 lc rgb "#d37295"
set linetype 14 lc rgb "#499894"
set linetype 15 lc rgb "#86bcb6"
set linetype 16 lc rgb "#79706e"
set linetype cycle 16
plot for [i=2:ncols] datafile using i:xtic(1) title columnheader(i) lt i-1, \
     datafile skip 1 using 0:(column(ncols+1)):(sprintf("%.1f", column(ncols+1))) with labels offset 0,0.8 notitle
