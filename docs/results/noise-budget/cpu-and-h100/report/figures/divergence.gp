# divergence — Parameter distance between paired runs
# gnuplot -c divergence.gp OUT.svg OUT.png divergence.csv
set datafile separator ','
set datafile columnheaders
set encoding utf8
set termoption noenhanced
set style fill transparent solid 0.18 noborder
set grid lc rgb '#d9d9d9' lw 1
set border lc rgb '#333333'
set key tmargin center horizontal box lc rgb '#bbbbbb'
set linetype 1 lc rgb '#000000' lw 2 dt 1 pt 7 ps 0.9
set linetype 2 lc rgb '#d55e00' lw 2 dt 2 pt 5 ps 0.9
set linetype 3 lc rgb '#0072b2' lw 2 dt 3 pt 9 ps 1.1
set linetype 4 lc rgb '#009e73' lw 2 dt 4 pt 13 ps 1.0
set linetype 5 lc rgb '#cc79a7' lw 2 dt 5 pt 11 ps 1.0
set linetype 6 lc rgb '#e69f00' lw 2 dt (12,6,2,6,2,6) pt 6 ps 0.9
set linetype 7 lc rgb '#56b4e9' lw 2 dt (2,4) pt 4 ps 0.9
set linetype 8 lc rgb '#7f7f7f' lw 2 dt (16,4) pt 8 ps 1.0
set linetype cycle 8
set terminal svg size 760,440 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set output ARG1
set logscale y
set format y '%g'
set xlabel 'optimiser step'
set ylabel 'relative parameter distance ‖θa − θb‖ / ‖θa‖'
set key tmargin font ',9'
plot ARG3 using 'step':(column('series')==1 ? column('rel_l2') : NaN) with linespoints lt 1 title 'cpu-b1 vs cpu-b1-sgd, seed 1', \
  ARG3 using 'step':(column('series')==2 ? column('rel_l2') : NaN) with linespoints lt 2 title 'cpu-b1 vs cpu-b1-sgd, seed 2', \
  ARG3 using 'step':(column('series')==3 ? column('rel_l2') : NaN) with linespoints lt 3 title 'cpu-b1 vs cpu-b1-sgd, seed 3', \
  ARG3 using 'step':(column('series')==4 ? column('rel_l2') : NaN) with linespoints lt 4 title 'cpu-b1 vs cpu-b1-sgd, seed 4', \
  ARG3 using 'step':(column('series')==5 ? column('rel_l2') : NaN) with linespoints lt 5 title 'cpu-b1 vs cpu-b1-sgd, seed 5', \
  ARG3 using 'step':(column('series')==6 ? column('rel_l2') : NaN) with linespoints lt 6 title 'cpu-b1 vs cpu-b1-sgd, seed 6', \
  ARG3 using 'step':(column('series')==7 ? column('rel_l2') : NaN) with linespoints lt 7 title 'cpu-b1 vs cpu-b1-sgd, seed 7', \
  ARG3 using 'step':(column('series')==8 ? column('rel_l2') : NaN) with linespoints lt 8 title 'cpu-b1 vs cpu-b1-sgd, seed 8', \
  ARG3 using 'step':(column('series')==9 ? column('rel_l2') : NaN) with linespoints lt 9 title 'cpu-b1 vs cpu-b64, seed 1', \
  ARG3 using 'step':(column('series')==10 ? column('rel_l2') : NaN) with linespoints lt 10 title 'cpu-b1 vs cpu-b64, seed 2', \
  ARG3 using 'step':(column('series')==11 ? column('rel_l2') : NaN) with linespoints lt 11 title 'cpu-b1 vs cpu-b64, seed 3', \
  ARG3 using 'step':(column('series')==12 ? column('rel_l2') : NaN) with linespoints lt 12 title 'cpu-b1 vs cpu-b64, seed 4', \
  ARG3 using 'step':(column('series')==13 ? column('rel_l2') : NaN) with linespoints lt 13 title 'cpu-b1 vs cpu-b64, seed 5', \
  ARG3 using 'step':(column('series')==14 ? column('rel_l2') : NaN) with linespoints lt 14 title 'cpu-b1 vs cpu-b64, seed 6', \
  ARG3 using 'step':(column('series')==15 ? column('rel_l2') : NaN) with linespoints lt 15 title 'cpu-b1 vs cpu-b64, seed 7', \
  ARG3 using 'step':(column('series')==16 ? column('rel_l2') : NaN) with linespoints lt 16 title 'cpu-b1 vs cpu-b64, seed 8'

set terminal pngcairo size 1520,880 font 'sans,22' linewidth 2 background '#ffffff'
set termoption noenhanced
set output ARG2
replot
set output
