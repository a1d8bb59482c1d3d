#!/bin/bash
# Busy polling and the replies it holds back (mqblkd_poll.py): with the
# default window, a long one, and with polling off.
. "$(dirname "$0")/mqblkd-lib.sh"

for poll in "" --poll-us=100000 --poll-us=0; do
	# shellcheck disable=SC2086 # an empty $poll is no argument
	mqblkd_start $poll -t 1 ram size=16M time_scale=0
	python3 "$SCRIPTS/mqblkd_poll.py" "$unixsocket" ||
		die "replies went missing with ${poll:-the default window}"
	mqblkd_stop
done
