# orthogonality.png from orthogonality.csv (written by ln_geometry_summary; run in its directory)
set terminal pngcairo noenhanced font 'sans,9' size 820,580
set output 'orthogonality.png'
set datafile separator ','
set logscale xy
set xlabel 'd'
set ylabel 'mean |cos(k, 1)| (± se)'
set key bottom left
set xrange [2.5:614.4]
set yrange [0.02:1]
set title 'orthogonality to the all-ones vector: weighted power-law fits over d = 8-512, exact Gaussian curve, d^(-1/2)'
a0 = -0.1836609674; b0 = -0.5078026338
a1 = -0.701381748; b1 = -0.06473029953
a2 = -0.120641293; b2 = -0.519282297
fit_line(x, a, b) = (x >= 8 && x <= 512) ? exp(a) * x**b : 1/0
set samples 400
plot \
  'orthogonality.csv' skip 1 every ::0::15 using 2:4:(column(10)/sqrt(column(9))) with yerrorbars pt 7 lc rgb '#1f77b4' title 'gauss keys', \
  fit_line(x, a0, b0) with lines lc rgb '#1f77b4' title sprintf('fit: b = -0.5078 ± 0.0023, chi^2/dof 0.9'), \
  'orthogonality.csv' skip 1 every ::16::31 using 2:4:(column(10)/sqrt(column(9))) with yerrorbars pt 5 lc rgb '#d62728' title 'offset keys (mean along 1)', \
  fit_line(x, a1, b1) with lines lc rgb '#d62728' title sprintf('fit: b = -0.0647 ± 0.0075, chi^2/dof 3.9'), \
  'orthogonality.csv' skip 1 every ::32::47 using 2:4:(column(10)/sqrt(column(9))) with yerrorbars pt 9 lc rgb '#2ca02c' title 'offset0 keys (zero mean)', \
  fit_line(x, a2, b2) with lines lc rgb '#2ca02c' title sprintf('fit: b = -0.5193 ± 0.0035, chi^2/dof 0.4'), \
  'orthogonality.csv' skip 1 every ::0::15 using 2:7 with lines dt 2 lc rgb 'black' title 'exact Gaussian E|cos|', \
  sqrt(2 / (pi * x)) with lines dt 3 lc rgb 'gray40' title 'theory sqrt(2/(pi d)) (slope -1/2)'
