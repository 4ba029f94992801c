#!/usr/bin/env bash
# lnkit LayerNorm geometry study: `bash studies/scripts/study_geometry.sh BUILD_DIR` (what
# `make study-geometry` runs).  Runs BUILD_DIR/studies/ln_geometry in two processes
# (the random-key heat maps, and the other parts) on the machine's 2 cores, writes
# results/geometry/ (CSV + .meta.json, summary.md) and draws the PNG heat maps and
# plots with gnuplot.  Options for the study can be passed in LNK_GEOMETRY_ARGS
# (e.g. "--runs 20 --n-step 3" for a quick run; the default is the full grid).
set -euo pipefail
build=${1:?usage: bash studies/scripts/study_geometry.sh BUILD_DIR}
bin=$build/studies/ln_geometry
[ -x "$bin" ] || { echo "study_geometry.sh: $bin not found (run make)" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "study_geometry.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
out=results/geometry
text=${LNK_GEOMETRY_TEXT:-data/multi30k/val.en}
args=${LNK_GEOMETRY_ARGS:-}
mkdir -p "$out"
tmp=$(mktemp -d "$out/.run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)

# shellcheck disable=SC2086
"$bin" --out "$out" --text "$text" --part random $args >"$tmp/random.log" 2>&1 &
p1=$!
# shellcheck disable=SC2086
"$bin" --out "$out" --text "$text" --part ortho,heads,model,maps,counts $args >"$tmp/rest.log" 2>&1 &
p2=$!
st=0
wait $p1 || st=1
wait $p2 || st=1
cat "$tmp/rest.log" "$tmp/random.log"
[ $st -eq 0 ] || { echo "study_geometry.sh: ln_geometry failed (log above)" >&2; exit 2; }

# summary.md: the two parts' tables under one title
{
    echo "# LayerNorm geometry (studies/ln_geometry, \`make study-geometry\`)"
    echo
    echo "Tables written by the study; plots by studies/scripts/study_geometry.sh (gnuplot)."
    echo
    cat "$out/summary_random.md" "$out/summary_ortho_heads_model_maps_counts.md"
} >"$tmp/summary.md"
mv "$tmp/summary.md" "$out/summary.md"
rm -f "$out/summary_random.md" "$out/summary_ortho_heads_model_maps_counts.md"

# ------------------------------------------------------------------ plots
if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
    term="pngcairo noenhanced font 'sans,9'"
else
    term="png noenhanced small"
fi

# heat maps: rows = key distribution, columns = norm; one PNG per statistic
for stat in frac_any mean_frac; do
    col=6
    [ $stat = mean_frac ] && col=7
    for dist in gauss offset; do
        for norm in none center scale layernorm; do
            awk -F, -v D=$dist -v N=$norm -v C=$col 'NR > 1 && $1 == D && $2 == N { print $3, $4, $C }' \
                "$out/heatmap.csv" >"$tmp/hm_${dist}_${norm}.dat"
        done
    done
    title="fraction of runs with >= 1 unselectable key"
    [ $stat = mean_frac ] && title="mean fraction of unselectable keys"
    gnuplot <<EOF
set terminal $term size 1500,700
set output "$tmp/heatmap_$stat.png"
set multiplot layout 2,4 title "$title (100 runs a cell; rows: Gaussian keys, offset + anisotropic keys)"
set xlabel "n (keys)"
set ylabel "d"
set cbrange [0:1]
set palette rgbformulae 33,13,10
set xrange [2.5:60.5]
set yrange [2.5:15.5]
set view map
do for [dist in "gauss offset"] {
  do for [norm in "none center scale layernorm"] {
    set title sprintf("%s keys, norm: %s", dist, norm)
    plot sprintf("$tmp/hm_%s_%s.dat", dist, norm) using 1:2:3 with image notitle
  }
}
unset multiplot
EOF
    mv "$tmp/heatmap_$stat.png" "$out/heatmap_$stat.png"
done

# |cos(k, 1)| against d, log-log, with the Gaussian theory and the fitted power laws
for dist in gauss offset offset0; do
    awk -F, -v D=$dist 'NR > 1 && $1 == D { print $2, $4, $7 }' "$out/orthogonality.csv" >"$tmp/or_$dist.dat"
done
fit() { awk -F, -v D="$1" -v K="$2" 'NR > 1 && $1 == D { print (K == "b" ? $5 : $7) }' "$out/orthogonality_fit.csv"; }
gnuplot <<EOF
set terminal $term size 800,560
set output "$tmp/orthogonality.png"
set logscale xy
set xlabel "d"
set ylabel "mean |cos(k, 1)|"
set key bottom left
set title "orthogonality to the all-ones vector (fits over d >= 8)"
plot "$tmp/or_gauss.dat" using 1:2 with points pt 7 title sprintf("Gaussian keys (b = %.3f)", $(fit gauss b)), \
     "$tmp/or_gauss.dat" using 1:3 with lines dt 2 title "Gaussian theory E|cos|", \
     "$tmp/or_offset.dat" using 1:2 with points pt 5 title sprintf("offset mean 1 + anisotropic (b = %.3f)", $(fit offset b)), \
     "$tmp/or_offset0.dat" using 1:2 with points pt 9 title sprintf("zero-mean offset + anisotropic (b = %.3f)", $(fit offset0 b)), \
     exp($(fit gauss a)) * x**($(fit gauss b)) with lines lc rgb "gray" notitle
EOF
mv "$tmp/orthogonality.png" "$out/orthogonality.png"

# attention maps at layer 2: one PNG per variant (heads side by side) and all together
heads=$(awk -F, 'NR > 1 { if ($1 + 1 > h) h = $1 + 1 } END { print h }' "$out/attn_map_layer2_fullLN.csv")
ntok=$(awk -F, 'NR > 1 { if ($2 + 1 > n) n = $2 + 1 } END { print n }' "$out/attn_map_layer2_fullLN.csv")
wmax=$(cat "$out"/attn_map_layer2_*.csv | awk -F, '$4 + 0 > m { m = $4 + 0 } END { print m }')
for v in fullLN headLN headRMS; do
    for ((j = 0; j < heads; j++)); do
        awk -F, -v J=$j 'NR > 1 && $1 == J { print $3, $2, $4 }' "$out/attn_map_layer2_$v.csv" >"$tmp/am_${v}_$j.dat"
    done
done
attn_plot() { # $1: output, $2: variants, $3: rows
    gnuplot <<EOF
set terminal $term size $((300 * heads)),$((290 * $3 + 40))
set output "$1"
set multiplot layout $3,$heads title "attention maps, layer 2 (rows: query, columns: key; Pre-LN encoder at init; common colour scale 0..$wmax)"
set palette rgbformulae 7,5,15
set cbrange [0:$wmax]
set xrange [-0.5:$ntok - 0.5]
set yrange [-0.5:$ntok - 0.5] reverse
set xlabel "key"
set ylabel "query"
set size ratio -1
do for [v in "$2"] {
  do for [j = 0:$heads - 1] {
    set title sprintf("%s, head %d", v, j)
    plot sprintf("$tmp/am_%s_%d.dat", v, j) using 1:2:3 with image notitle
  }
}
unset multiplot
EOF
}
for v in fullLN headLN headRMS; do
    attn_plot "$tmp/attn_layer2_$v.png" "$v" 1
    mv "$tmp/attn_layer2_$v.png" "$out/attn_layer2_$v.png"
done
attn_plot "$tmp/attn_layer2.png" "fullLN headLN headRMS" 3
mv "$tmp/attn_layer2.png" "$out/attn_layer2.png"

echo "study_geometry.sh: wrote $out/ (CSV + .meta.json, summary.md, PNGs) in $(($(date +%s) - start)) s"
