# symmetry_distance — Distance between the closest units
# gnuplot -c symmetry_distance.gp OUT.svg OUT.png symmetry_distance.csv
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
set xlabel 'optimiser step'
set logscale y
set format y '%g'
set ylabel 'relative distance of the closest pair'
plot ARG3 using 'step':(column('series')==1 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 1 title 'cpu-t1', \
  ARG3 using 'step':(column('series')==2 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 2 title 'cpu-t8', \
  ARG3 using 'step':(column('series')==3 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 3 title 'cuda', \
  ARG3 using 'step':(column('series')==4 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 4 title 'cuda-benchmark', \
  ARG3 using 'step':(column('series')==5 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 5 title 'cuda-default-init', \
  ARG3 using 'step':(column('series')==6 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 6 title 'cuda-deterministic', \
  ARG3 using 'step':(column('series')==7 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 7 title 'cuda-deterministic-noise-1e-3', \
  ARG3 using 'step':(column('series')==8 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 8 title 'cuda-deterministic-noise-1e-6', \
  ARG3 using 'step':(column('series')==9 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 9 title 'cuda-deterministic-noise-1e-8', \
  ARG3 using 'step':(column('series')==10 && column('drawn')==1 ? column('min_relative_distance') : NaN) with lines lt 10 title 'cuda-nocudnn'

set terminal pngcairo size 1520,880 font 'sans,22' linewidth 2 background '#ffffff'
set termoption noenhanced
set output ARG2
replot
set output
