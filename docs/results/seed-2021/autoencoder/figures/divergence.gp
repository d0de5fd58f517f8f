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
plot ARG3 using 'step':(column('series')==1 ? column('rel_l2') : NaN) with linespoints lt 1 title 'cpu-t1 vs cpu-all, seed 1', \
  ARG3 using 'step':(column('series')==2 ? column('rel_l2') : NaN) with linespoints lt 2 title 'cpu-t1 vs cpu-all, seed 2', \
  ARG3 using 'step':(column('series')==3 ? column('rel_l2') : NaN) with linespoints lt 3 title 'cpu-t1 vs cpu-all, seed 3', \
  ARG3 using 'step':(column('series')==4 ? column('rel_l2') : NaN) with linespoints lt 4 title 'cpu-t1 vs cpu-all, seed 4', \
  ARG3 using 'step':(column('series')==5 ? column('rel_l2') : NaN) with linespoints lt 5 title 'cpu-t1 vs cpu-all, seed 5', \
  ARG3 using 'step':(column('series')==6 ? column('rel_l2') : NaN) with linespoints lt 6 title 'cpu-t1 vs cpu-all, seed 6', \
  ARG3 using 'step':(column('series')==7 ? column('rel_l2') : NaN) with linespoints lt 7 title 'cpu-t1 vs cpu-all, seed 7', \
  ARG3 using 'step':(column('series')==8 ? column('rel_l2') : NaN) with linespoints lt 8 title 'cpu-t1 vs cpu-all, seed 8', \
  ARG3 using 'step':(column('series')==9 ? column('rel_l2') : NaN) with linespoints lt 9 title 'cpu-t1 vs cpu-fault, seed 1', \
  ARG3 using 'step':(column('series')==10 ? column('rel_l2') : NaN) with linespoints lt 10 title 'cpu-t1 vs cpu-fault, seed 2', \
  ARG3 using 'step':(column('series')==11 ? column('rel_l2') : NaN) with linespoints lt 11 title 'cpu-t1 vs cpu-fault, seed 3', \
  ARG3 using 'step':(column('series')==12 ? column('rel_l2') : NaN) with linespoints lt 12 title 'cpu-t1 vs cpu-fault, seed 4', \
  ARG3 using 'step':(column('series')==13 ? column('rel_l2') : NaN) with linespoints lt 13 title 'cpu-t1 vs cpu-fault, seed 5', \
  ARG3 using 'step':(column('series')==14 ? column('rel_l2') : NaN) with linespoints lt 14 title 'cpu-t1 vs cpu-fault, seed 6', \
  ARG3 using 'step':(column('series')==15 ? column('rel_l2') : NaN) with linespoints lt 15 title 'cpu-t1 vs cpu-fault, seed 7', \
  ARG3 using 'step':(column('series')==16 ? column('rel_l2') : NaN) with linespoints lt 16 title 'cpu-t1 vs cpu-fault, seed 8', \
  ARG3 using 'step':(column('series')==17 ? column('rel_l2') : NaN) with linespoints lt 17 title 'cpu-t1 vs cpu-gauss, seed 1', \
  ARG3 using 'step':(column('series')==18 ? column('rel_l2') : NaN) with linespoints lt 18 title 'cpu-t1 vs cpu-gauss, seed 2', \
  ARG3 using 'step':(column('series')==19 ? column('rel_l2') : NaN) with linespoints lt 19 title 'cpu-t1 vs cpu-gauss, seed 3', \
  ARG3 using 'step':(column('series')==20 ? column('rel_l2') : NaN) with linespoints lt 20 title 'cpu-t1 vs cpu-gauss, seed 4', \
  ARG3 using 'step':(column('series')==21 ? column('rel_l2') : NaN) with linespoints lt 21 title 'cpu-t1 vs cpu-gauss, seed 5', \
  ARG3 using 'step':(column('series')==22 ? column('rel_l2') : NaN) with linespoints lt 22 title 'cpu-t1 vs cpu-gauss, seed 6', \
  ARG3 using 'step':(column('series')==23 ? column('rel_l2') : NaN) with linespoints lt 23 title 'cpu-t1 vs cpu-gauss, seed 7', \
  ARG3 using 'step':(column('series')==24 ? column('rel_l2') : NaN) with linespoints lt 24 title 'cpu-t1 vs cpu-gauss, seed 8', \
  ARG3 using 'step':(column('series')==25 ? column('rel_l2') : NaN) with linespoints lt 25 title 'cpu-t1 vs cpu-sgd, seed 1', \
  ARG3 using 'step':(column('series')==26 ? column('rel_l2') : NaN) with linespoints lt 26 title 'cpu-t1 vs cpu-sgd, seed 2', \
  ARG3 using 'step':(column('series')==27 ? column('rel_l2') : NaN) with linespoints lt 27 title 'cpu-t1 vs cpu-sgd, seed 3', \
  ARG3 using 'step':(column('series')==28 ? column('rel_l2') : NaN) with linespoints lt 28 title 'cpu-t1 vs cpu-sgd, seed 4', \
  ARG3 using 'step':(column('series')==29 ? column('rel_l2') : NaN) with linespoints lt 29 title 'cpu-t1 vs cpu-sgd, seed 5', \
  ARG3 using 'step':(column('series')==30 ? column('rel_l2') : NaN) with linespoints lt 30 title 'cpu-t1 vs cpu-sgd, seed 6', \
  ARG3 using 'step':(column('series')==31 ? column('rel_l2') : NaN) with linespoints lt 31 title 'cpu-t1 vs cpu-sgd, seed 7', \
  ARG3 using 'step':(column('series')==32 ? column('rel_l2') : NaN) with linespoints lt 32 title 'cpu-t1 vs cpu-sgd, seed 8', \
  ARG3 using 'step':(column('series')==33 ? column('rel_l2') : NaN) with linespoints lt 33 title 'cpu-t1 vs cpu-shuffle, seed 1', \
  ARG3 using 'step':(column('series')==34 ? column('rel_l2') : NaN) with linespoints lt 34 title 'cpu-t1 vs cpu-shuffle, seed 2', \
  ARG3 using 'step':(column('series')==35 ? column('rel_l2') : NaN) with linespoints lt 35 title 'cpu-t1 vs cpu-shuffle, seed 3', \
  ARG3 using 'step':(column('series')==36 ? column('rel_l2') : NaN) with linespoints lt 36 title 'cpu-t1 vs cpu-shuffle, seed 4', \
  ARG3 using 'step':(column('series')==37 ? column('rel_l2') : NaN) with linespoints lt 37 title 'cpu-t1 vs cpu-shuffle, seed 5', \
  ARG3 using 'step':(column('series')==38 ? column('rel_l2') : NaN) with linespoints lt 38 title 'cpu-t1 vs cpu-shuffle, seed 6', \
  ARG3 using 'step':(column('series')==39 ? column('rel_l2') : NaN) with linespoints lt 39 title 'cpu-t1 vs cpu-shuffle, seed 7', \
  ARG3 using 'step':(column('series')==40 ? column('rel_l2') : NaN) with linespoints lt 40 title 'cpu-t1 vs cpu-shuffle, seed 8', \
  ARG3 using 'step':(column('series')==41 ? column('rel_l2') : NaN) with linespoints lt 41 title 'cpu-t1 vs cuda, seed 1', \
  ARG3 using 'step':(column('series')==42 ? column('rel_l2') : NaN) with linespoints lt 42 title 'cpu-t1 vs cuda, seed 2', \
  ARG3 using 'step':(column('series')==43 ? column('rel_l2') : NaN) with linespoints lt 43 title 'cpu-t1 vs cuda, seed 3', \
  ARG3 using 'step':(column('series')==44 ? column('rel_l2') : NaN) with linespoints lt 44 title 'cpu-t1 vs cuda, seed 4', \
  ARG3 using 'step':(column('series')==45 ? column('rel_l2') : NaN) with linespoints lt 45 title 'cpu-t1 vs cuda, seed 5', \
  ARG3 using 'step':(column('series')==46 ? column('rel_l2') : NaN) with linespoints lt 46 title 'cpu-t1 vs cuda, seed 6', \
  ARG3 using 'step':(column('series')==47 ? column('rel_l2') : NaN) with linespoints lt 47 title 'cpu-t1 vs cuda, seed 7', \
  ARG3 using 'step':(column('series')==48 ? column('rel_l2') : NaN) with linespoints lt 48 title 'cpu-t1 vs cuda, seed 8', \
  ARG3 using 'step':(column('series')==49 ? column('rel_l2') : NaN) with linespoints lt 49 title 'cpu-t1 vs cuda-det, seed 1', \
  ARG3 using 'step':(column('series')==50 ? column('rel_l2') : NaN) with linespoints lt 50 title 'cpu-t1 vs cuda-det, seed 2', \
  ARG3 using 'step':(column('series')==51 ? column('rel_l2') : NaN) with linespoints lt 51 title 'cpu-t1 vs cuda-det, seed 3', \
  ARG3 using 'step':(column('series')==52 ? column('rel_l2') : NaN) with linespoints lt 52 title 'cpu-t1 vs cuda-det, seed 4', \
  ARG3 using 'step':(column('series')==53 ? column('rel_l2') : NaN) with linespoints lt 53 title 'cpu-t1 vs cuda-det, seed 5', \
  ARG3 using 'step':(column('series')==54 ? column('rel_l2') : NaN) with linespoints lt 54 title 'cpu-t1 vs cuda-det, seed 6', \
  ARG3 using 'step':(column('series')==55 ? column('rel_l2') : NaN) with linespoints lt 55 title 'cpu-t1 vs cuda-det, seed 7', \
  ARG3 using 'step':(column('series')==56 ? column('rel_l2') : NaN) with linespoints lt 56 title 'cpu-t1 vs cuda-det, seed 8', \
  ARG3 using 'step':(column('series')==57 ? column('rel_l2') : NaN) with linespoints lt 57 title 'cpu-t1 vs cuda-nocudnn, seed 1', \
  ARG3 using 'step':(column('series')==58 ? column('rel_l2') : NaN) with linespoints lt 58 title 'cpu-t1 vs cuda-nocudnn, seed 2', \
  ARG3 using 'step':(column('series')==59 ? column('rel_l2') : NaN) with linespoints lt 59 title 'cpu-t1 vs cuda-nocudnn, seed 3', \
  ARG3 using 'step':(column('series')==60 ? column('rel_l2') : NaN) with linespoints lt 60 title 'cpu-t1 vs cuda-nocudnn, seed 4', \
  ARG3 using 'step':(column('series')==61 ? column('rel_l2') : NaN) with linespoints lt 61 title 'cpu-t1 vs cuda-nocudnn, seed 5', \
  ARG3 using 'step':(column('series')==62 ? column('rel_l2') : NaN) with linespoints lt 62 title 'cpu-t1 vs cuda-nocudnn, seed 6', \
  ARG3 using 'step':(column('series')==63 ? column('rel_l2') : NaN) with linespoints lt 63 title 'cpu-t1 vs cuda-nocudnn, seed 7', \
  ARG3 using 'step':(column('series')==64 ? column('rel_l2') : NaN) with linespoints lt 64 title 'cpu-t1 vs cuda-nocudnn, seed 8', \
  ARG3 using 'step':(column('series')==65 ? column('rel_l2') : NaN) with linespoints lt 65 title 'cpu-t1 vs cuda-sgd, seed 1', \
  ARG3 using 'step':(column('series')==66 ? column('rel_l2') : NaN) with linespoints lt 66 title 'cpu-t1 vs cuda-sgd, seed 2', \
  ARG3 using 'step':(column('series')==67 ? column('rel_l2') : NaN) with linespoints lt 67 title 'cpu-t1 vs cuda-sgd, seed 3', \
  ARG3 using 'step':(column('series')==68 ? column('rel_l2') : NaN) with linespoints lt 68 title 'cpu-t1 vs cuda-sgd, seed 4', \
  ARG3 using 'step':(column('series')==69 ? column('rel_l2') : NaN) with linespoints lt 69 title 'cpu-t1 vs cuda-sgd, seed 5', \
  ARG3 using 'step':(column('series')==70 ? column('rel_l2') : NaN) with linespoints lt 70 title 'cpu-t1 vs cuda-sgd, seed 6', \
  ARG3 using 'step':(column('series')==71 ? column('rel_l2') : NaN) with linespoints lt 71 title 'cpu-t1 vs cuda-sgd, seed 7', \
  ARG3 using 'step':(column('series')==72 ? column('rel_l2') : NaN) with linespoints lt 72 title 'cpu-t1 vs cuda-sgd, seed 8', \
  ARG3 using 'step':(column('series')==73 ? column('rel_l2') : NaN) with linespoints lt 73 title 'cpu-t1 vs cuda-tf32, seed 1', \
  ARG3 using 'step':(column('series')==74 ? column('rel_l2') : NaN) with linespoints lt 74 title 'cpu-t1 vs cuda-tf32, seed 2', \
  ARG3 using 'step':(column('series')==75 ? column('rel_l2') : NaN) with linespoints lt 75 title 'cpu-t1 vs cuda-tf32, seed 3', \
  ARG3 using 'step':(column('series')==76 ? column('rel_l2') : NaN) with linespoints lt 76 title 'cpu-t1 vs cuda-tf32, seed 4', \
  ARG3 using 'step':(column('series')==77 ? column('rel_l2') : NaN) with linespoints lt 77 title 'cpu-t1 vs cuda-tf32, seed 5', \
  ARG3 using 'step':(column('series')==78 ? column('rel_l2') : NaN) with linespoints lt 78 title 'cpu-t1 vs cuda-tf32, seed 6', \
  ARG3 using 'step':(column('series')==79 ? column('rel_l2') : NaN) with linespoints lt 79 title 'cpu-t1 vs cuda-tf32, seed 7', \
  ARG3 using 'step':(column('series')==80 ? column('rel_l2') : NaN) with linespoints lt 80 title 'cpu-t1 vs cuda-tf32, seed 8'

set terminal pngcairo size 1520,880 font 'sans,22' linewidth 2 background '#ffffff'
set termoption noenhanced
set output ARG2
replot
set output
