# final_loss — Final loss per execution config
# gnuplot -c final_loss.gp OUT.svg OUT.png final_loss.csv final_loss_runs.csv
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
set xrange [0.4:4.6]
set xtics ('cpu-t1' 1, 'cuda' 2, 'cuda-deterministic' 3, 'cuda-nocudnn' 4) rotate by -20
set boxwidth 0.5
set xlabel 'execution config'
set ylabel 'final training loss'
set key off
plot ARG3 using 'series':'q1':'min':'max':'q3':(column('series')) with candlesticks whiskerbars 0.5 lc variable lw 1.5 notitle, \
  ARG3 using 'series':'median':'median':'median':'median':(column('series')) with candlesticks lc variable lw 3 notitle, \
  ARG4 using 'x':'final_loss':(column('series')) with points lc variable pt 7 ps 0.8 notitle

set terminal pngcairo size 1520,880 font 'sans,22' linewidth 2 background '#ffffff'
set termoption noenhanced
set output ARG2
replot
set output
