# gnuplot script written by studies/multi30k_full_summary.py: the Post/Pre ratios
# of the extreme Hessian eigenvalues against width (trend.csv, trend_points.csv)
set terminal pngcairo size 900,560 noenhanced
set output 'trend.png'
set datafile separator ','
set logscale xy
set xrange [24:700]
set xtics (32, 64, 128, 256, 512)
set xlabel 'width d (h = max(1, d/64), d_ff = 4d, 6-6 encoder-decoder, all 1014 pairs)'
set ylabel 'Post-LN / Pre-LN'
set title 'Multi30k, Xavier init: Post/Pre ratio of the extreme Hessian eigenvalues (points: seeds; bars: mean ± sd)'
set key top left
set ytics (0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8)
set grid ytics
plot 'trend_points.csv' using (strcol(1) eq 'top' ? $2 * 0.97 : 1/0):3 skip 1 with points pt 7 ps 0.6 lc rgb '#1f77b4' title 'top, one seed', \
     'trend_points.csv' using (strcol(1) eq 'bot' ? $2 * 1.03 : 1/0):3 skip 1 with points pt 5 ps 0.6 lc rgb '#d62728' title 'abs(bottom), one seed', \
     'trend.csv' using (strcol(1) eq 'top' && $3 > 1 ? $2 * 0.97 : 1/0):4:($4 - $5):($4 + $5) skip 1 with yerrorbars pt 6 ps 1.4 lc rgb '#1f77b4' title 'top, mean ± sd', \
     'trend.csv' using (strcol(1) eq 'bot' && $3 > 1 ? $2 * 1.03 : 1/0):4:($4 - $5):($4 + $5) skip 1 with yerrorbars pt 4 ps 1.4 lc rgb '#d62728' title 'abs(bottom), mean ± sd', \
     [24:512] exp(0.10097772916233078 + 0.12080741681617163 * log(x)) with lines dt 2 lc rgb '#1f77b4' title 'fit (top), d^0.12', \
     [24:512] exp(-0.15228906253310714 + 0.19872250005093894 * log(x)) with lines dt 2 lc rgb '#d62728' title 'fit (abs(bottom)), d^0.20'
