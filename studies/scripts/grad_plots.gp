# Plots of the gradient-norm study from grad_table's summary CSVs.
#   gnuplot -e "dir='results/grad'" studies/scripts/grad_plots.gp
# Writes DIR/depth.png, depth_seq2seq.png, width.png, profile_seq2seq.png,
# profile_cls.png, lemma2.png (each only when its data file exists).
if (!exists("dir")) dir = 'results/grad'
have(f) = system(sprintf("test -f '%s/%s' && echo 1 || echo 0", dir, f)) eq "1"
f(n) = sprintf("%s/%s", dir, n)

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1400,560 enhanced font "sans,11" linewidth 1.3
} else {
    set terminal png size 1400,560 enhanced
}
set datafile separator comma
set datafile missing ""
set grid
set key top right

# colours: Post-LN red, Pre-LN blue; dashed = theory
set style line 1 lc rgb "#c0392b" pt 7 ps 0.9
set style line 2 lc rgb "#2c6fbb" pt 5 ps 0.9
set style line 11 lc rgb "#c0392b" dt 2
set style line 12 lc rgb "#2c6fbb" dt 2

# ---------------------------------------------------------------- depth
do for [sweep in "depth depth_seq2seq"] {
    if (have(sweep."_summary.csv")) {
        set output f(sweep.".png")
        set multiplot layout 1,2 title (sweep eq "depth" ? \
            "Last-layer ||dL/dW^2||_F against depth L (cls encoder), mean ± sd over seeds" : \
            "Last-layer ||dL/dW^2||_F of L-L seq2seq models (Figure 3 c, d), mean ± sd over seeds")
        set logscale xy
        set key bottom left
        set xlabel "L (blocks" . (sweep eq "depth" ? ")" : " per stack)")
        set ylabel "||dL/dW^{2,L}||_F"
        do for [s in "theorem realistic"] {
            set title s." setting"
            data = f(sweep."_summary.csv")
            plot data using "L":s."_post_mean":s."_post_sd" with yerrorlines ls 1 title "Post-LN", \
                 data using "L":s."_post_theory" with lines ls 11 title "Post-LN theory: flat", \
                 data using "L":s."_pre_mean":s."_pre_sd" with yerrorlines ls 2 title "Pre-LN", \
                 data using "L":s."_pre_theory" with lines ls 12 title "Pre-LN theory: L^{-1/2}"
        }
        unset multiplot
        unset logscale
        set key top right
        unset output
    }
}

# ---------------------------------------------------------------- width
if (have("width_summary.csv")) {
    set output f("width.png")
    data = f("width_summary.csv")
    set multiplot layout 1,2 title "Last-layer ||dL/dW^2||_F against width d, mean ± sd over seeds"
    set logscale xy
    set xlabel "d"
    set ylabel "||dL/dW^{2,L}||_F"
    set title "norm (dashed: d sqrt(ln d) through the first point)"
    set key top left
    plot data using "d":"theorem_post_mean":"theorem_post_sd" with yerrorlines ls 1 title "theorem Post-LN", \
         data using "d":"theorem_pre_mean":"theorem_pre_sd" with yerrorlines ls 2 title "theorem Pre-LN", \
         data using "d":"realistic_post_mean":"realistic_post_sd" with yerrorlines ls 1 pt 6 dt 3 title "realistic Post-LN", \
         data using "d":"realistic_pre_mean":"realistic_pre_sd" with yerrorlines ls 2 pt 4 dt 3 title "realistic Pre-LN", \
         data using "d":"theorem_post_theory" with lines ls 11 title "d sqrt(ln d)"
    set title "norm / (d sqrt(ln d)): bounded if the rate holds, flat if it is tight"
    set ylabel "ratio"
    set key top right
    b(d) = d * sqrt(log(d))
    plot data using "d":(column("theorem_post_mean")/b(column("d"))) with linespoints ls 1 title "theorem Post-LN", \
         data using "d":(column("theorem_pre_mean")/b(column("d"))) with linespoints ls 2 title "theorem Pre-LN", \
         data using "d":(column("realistic_post_mean")/b(column("d"))) with linespoints ls 1 pt 6 dt 3 title "realistic Post-LN", \
         data using "d":(column("realistic_pre_mean")/b(column("d"))) with linespoints ls 2 pt 4 dt 3 title "realistic Pre-LN"
    unset multiplot
    unset logscale
    set key top right
    unset output
}

# ---------------------------------------------------------------- per-layer profile (Figure 3 a, b)
do for [task in "seq2seq cls"] {
    if (have("profile_".task."_theorem_summary.csv")) {
        set terminal push
        if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
            set terminal pngcairo size 1400,1000 enhanced font "sans,11" linewidth 1.3
        } else {
            set terminal png size 1400,1000 enhanced
        }
        set output f("profile_".task.".png")
        set multiplot layout 2,2 title "Per-layer gradient norms at initialisation, ".task. \
            (task eq "seq2seq" ? " 6-6 (encoder blocks, then decoder blocks)" : " encoder") . \
            ", mean ± sd over seeds (Figure 3 a, b)"
        set xlabel "block"
        set ylabel "||dL/dW||_F"
        set yrange [0:*]
        do for [s in "theorem realistic"] {
            data = f("profile_".task."_".s."_summary.csv")
            do for [w in "w1 w2"] {
                set title sprintf("%s setting: W^%s", s, w eq "w1" ? "1" : "2")
                plot data using "x":"post_".w."_mean":"post_".w."_sd":xtic(2) with yerrorlines ls 1 title "Post-LN", \
                     data using "x":"pre_".w."_mean":"pre_".w."_sd":xtic(2) with yerrorlines ls 2 title "Pre-LN"
            }
        }
        unset multiplot
        set yrange [*:*]
        set xtics autofreq
        unset output
        set terminal pop
    }
}

# ---------------------------------------------------------------- Lemma 2
if (have("lemma2_summary.csv")) {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
        set terminal pngcairo size 1400,1000 enhanced font "sans,11" linewidth 1.3
    } else {
        set terminal png size 1400,1000 enhanced
    }
    set output f("lemma2.png")
    data = f("lemma2_summary.csv")
    set multiplot layout 2,2 title "Lemma 2: E||x_l||^2/d against the layer l (paper numbering; l = 1 is the embedding output), mean ± sd over seeds"
    set xlabel "l"
    set ylabel "E||x||^2 / d"
    set key top left
    do for [s in "theorem realistic"] {
        set title s." setting: Pre-LN block inputs"
        plot data using "l":"lo":"hi" with filledcurves lc rgb "#cfe0f3" title "band [1 + l/2, 1 + 3l/2]", \
             data using "l":s."_pre_mean":s."_pre_sd" with yerrorlines ls 2 title "Pre-LN x^{pre}_l"
    }
    set yrange [1:2]
    do for [s in "theorem realistic"] {
        set title s." setting: Post-LN FFN residual sums"
        plot data using "l":s."_post5_mean":s."_post5_sd" with yerrorlines ls 1 title "Post-LN x^{post,5}_l", \
             data using "l":s."_post5_target" with lines ls 11 title "1 + 2r/(1+r)^2, r = d_{ff}/d (1.5 for r = 1)"
    }
    set yrange [*:*]
    unset multiplot
    unset output
}
