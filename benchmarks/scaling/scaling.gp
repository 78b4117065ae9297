# Makespan against workers, flat farmer, hierarchical farmers, the decentralised farm and work stealing, one panel per workload (run_scaling.py writes
# the data). Variables: dir (data folder), out (PNG), titles (workload names, space-separated), series (curve
# names, space-separated: columns 2, 3, ... of the data; the last column is the fluid bound), n (curves).
set terminal pngcairo size 1200,520 font "sans,9" noenhanced
set output out
set multiplot layout 1,2 title "pfarm-sim: makespan (s) against workers, ss (stealing: ss or gss claims), 1 ms tasks, 0.82 us per answer, 0.17 us per atomic; dashed: fluid bound"
set logscale xy 2
set format y "%g"
set xlabel "workers"
set ylabel "makespan (s)"
set grid
set key top right
colours = "#000000 #1b9e77 #d95f02 #7570b3 #e7298a #66a61e #e6ab02 #a6761d"
do for [i=0:words(titles)-1] {
  set title word(titles, i+1)
  f = sprintf("%s/scaling%d.dat", dir, i)
  plot for [c=1:n] f using 1:(column(c+1)) with linespoints pt 7 ps 0.6 lc rgb word(colours, c) title word(series, c), \
       f using 1:(column(n+2)) with lines dt 2 lc rgb "#888888" title "fluid bound"
}
unset multiplot
