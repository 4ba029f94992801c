# gnuplot script: the Post-LN and Pre-LN Hessian spectral densities (SLQ)
set terminal pngcairo size 900,560 noenhanced
set output 'density.png'
set datafile separator ','
set logscale y
set yrange [1e-6:*]
set format y '%.0e'
set xlabel 'eigenvalue'
set ylabel 'density (log scale)'
set title 'Hessian spectral density at initialisation (lm, d=32, L=4, 3 seeds, SLQ 10x80, sigma=0.0719)'
set key top right
plot 'density.csv' every ::1 using (strcol(1) eq 'post' ? $2 : 1/0):3 with lines lw 2 title 'Post-LN', \
     'density.csv' every ::1 using (strcol(1) eq 'pre' ? $2 : 1/0):3 with lines lw 2 title 'Pre-LN'
