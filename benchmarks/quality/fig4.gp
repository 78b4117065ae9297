# Fig. 4 of Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in heterogeneous
# systems", in the simulator: multi's installment sizes (left axis) against the background load
# (right axis, 1-minute load average = factor - 1) for four workers of the non-dedicated platform.
# Variables: dir, out, labels (four worker labels), xmax.
set terminal pngcairo size 1200,750 font "sans,9" noenhanced
set output out
set multiplot layout 2,2 title "multi (times-only calibration) on the non-dedicated heterogeneous platform, uniform loop"
set xrange [0:xmax]
set logscale y
set ylabel "installment size (tasks)"
set y2label "load"
set y2range [0:8]
set y2tics 0,2,8
set ytics nomirror
set xlabel "simulated time"
set key top right font "sans,8"
do for [k=0:3] {
  set title word(labels, k+1)
  plot sprintf("%s/fig4_load%d.dat", dir, k) using 1:2 axes x1y2 with steps lw 1.5 dt 2 lc rgb "#d95f02" title "load", \
       sprintf("%s/fig4_chunks%d.dat", dir, k) using 1:2 with linespoints pt 7 ps 0.5 lc rgb "#1b9e77" title "installment"
}
unset multiplot
