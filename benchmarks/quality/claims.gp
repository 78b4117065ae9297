# The papers' claims at a glance (run_quality.py writes the data). Variables: dir, out, het, hom.
set terminal pngcairo size 1300,900 font "sans,9" noenhanced
set output out
set multiplot layout 2,2
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set key top left font "sans,8"
set xtics font "sans,8"

set title "Gonzalez-Velez & Cole 2009: single round on ".het." (makespan / bound)"
set logscale y
set yrange [0.9:8]
set ytics (1, 1.25, 1.5, 2, 3, 4, 6)
plot dir."/single.dat" using 2:xtic(1) lc rgb "#999999" title "deal (isometric)", \
     "" using 3 lc rgb "#1b9e77" title "dealdyn-sm (times-only)", \
     "" using 4 lc rgb "#d95f02" title "dealdyn-lr", \
     "" using 5 lc rgb "#7570b3" title "dealdyn-mv"

set title "Gonzalez-Velez & Cole 2009: work queue vs adaptive multi-round, uniform (makespan / bound)"
set yrange [0.9:15]
set ytics (1, 1.25, 1.5, 2, 3, 5, 10)
set xtics rotate by 20 right font "sans,7"
plot dir."/multi.dat" using 2:xtic(1) lc rgb "#999999" title "ss (work queue)", \
     "" using 3 lc rgb "#1b9e77" title "multi"

set title "Chronopoulos et al. 2005: percent imbalance on ".het.", mean of the five workloads"
unset logscale y
set autoscale y
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set ytics auto
set xtics norotate font "sans,8"
plot dir."/balance.dat" using 2:xtic(1) lc rgb "#999999" title "simple", \
     "" using 3 lc rgb "#d95f02" title "distributed (calibrated)", \
     "" using 4 lc rgb "#1b9e77" title "distributed +weights"

set offsets 0, 0, 0, 0
set title "Yang, Cheng & Shih 2007 and HPLS: uniform loop, het = ".het.", hom = ".hom
set logscale y
set yrange [0.95:3]
set ytics (1, 1.05, 1.1, 1.25, 1.5, 2, 3)
set xtics rotate by 20 right font "sans,8"
plot dir."/twophase.dat" using 2:xtic(1) lc rgb "#666666" title "static", \
     "" using 3 lc rgb "#999999" title "plain gss/fss/tss", \
     "" using 4 lc rgb "#1b9e77" title "n-* +weights (alpha 80)", \
     "" using 5 lc rgb "#d95f02" title "hpls-* (calibrated)"
unset multiplot
