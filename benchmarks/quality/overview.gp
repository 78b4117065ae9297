# Makespan over the lower bound of every technique, one panel per platform (run_quality.py writes the data).
# Variables: dir (data folder), out (PNG), titles (the platform names, space-separated), n (techniques),
# workloads (the workload names, space-separated: columns 3, 4, ... of the data), ymax (top of the y axis).
set terminal pngcairo size 1500,1250 font "sans,8" noenhanced
set output out
set multiplot layout 3,2 margins 0.05, 0.98, 0.08, 0.93 spacing 0.06, 0.12 title "makespan / lower bound (log scale): pfarm-sim, every technique; dashed: 1.05"
set logscale y
set yrange [0.95:ymax]
set ytics (1, 1.25, 1.5, 2, 3, 5, 10)
set grid ytics
set xrange [-1:n]
set xtics rotate by 90 right nomirror font "sans,7"
set key at screen 0.5, 0.975 center horizontal maxrows 1 width 2 font "sans,9"
pts = "7 5 9 11 13"
colours = "#1b9e77 #d95f02 #7570b3 #e7298a #66a61e"
set arrow 1 from -1,1.05 to n,1.05 nohead dt 2 lc rgb "#888888"
do for [i=0:5] {
  set title word(titles, i+1)
  f = sprintf("%s/overview%d.dat", dir, i)
  if (i == 0) { set key } else { unset key }
  plot for [c=1:words(workloads)] f using 1:(column(c+2)):xtic(2) with points pt int(word(pts, c)) ps 0.7 \
       lc rgb word(colours, c) title word(workloads, c)
}
unset multiplot
