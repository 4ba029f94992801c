# Expand the man page marker '.\" @OPTIONS@': the OPTIONS section of the
# command the page is for (lnkit-CMD.1), generated from its option table by
# the program doc (awk -v doc=build/tools/cli_doc).
# usage: awk -v doc=CLI_DOC -f tools/manpage.awk man/PAGE.1 > OUT
/^\.\\" @OPTIONS@$/ {
    cmd = FILENAME
    sub(/.*\/lnkit-/, "", cmd)
    sub(/\.1$/, "", cmd)
    n = 0
    while (((doc " " cmd) | getline line) > 0) { print line; n++ }
    if (close(doc " " cmd) != 0 || n == 0) {
        print "manpage.awk: " doc " " cmd " failed" > "/dev/stderr"; exit 1
    }
    next
}
{ print }
