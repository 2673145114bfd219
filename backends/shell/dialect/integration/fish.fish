# dshpty's fish integration, read by `fish --init-command 'source ...'` after the user's
# config (rc user) or none (--no-config). It marks every prompt with OSC 133 sequences that
# carry the session's nonce (see the bash integration for the kinds), by wrapping
# fish_prompt: whatever prompt the user defines later is wrapped again before it is drawn.
# Nothing here is exported; history is off by --private.
# The nonce comes through a pipe the helper filled, read once (see the bash integration).
read -g __dshpty_nonce <$DSHPTY_NONCE_FROM
set -l rc $DSHPTY_RC
set -e DSHPTY_NONCE_FROM
set -e DSHPTY_RC
set -e DSHPTY_HISTORY
if test "$rc" != user
  set -g fish_greeting ''
  function fish_prompt
    printf 'dsh> '
  end
end

function __dshpty_status
  return $argv[1]
end

# Each wrap copies the prompt it found to a name of its own, so a prompt that calls an
# older copy (a virtualenv's activate.fish wraps fish_prompt as _old_fish_prompt) reaches a
# wrapper whose own copy is still there; only the outermost wrapper prints marks.
set -g __dshpty_wraps 0
function __dshpty_wrap
  set -g __dshpty_wraps (math $__dshpty_wraps + 1)
  set -l user __dshpty_user_prompt_$__dshpty_wraps
  functions -q fish_prompt; and functions -c fish_prompt $user
  eval "function fish_prompt; __dshpty_prompt $user \$status; end"
end

# The user's prompt, seeing the status it would have seen.
function __dshpty_call --argument-names user st
  if functions -q $user
    __dshpty_status $st
    $user
  end
end

function __dshpty_prompt --argument-names user st
  if set -q __dshpty_drawing
    __dshpty_call $user $st
    return
  end
  set -g __dshpty_drawing 1
  if set -q __dshpty_refused[1]
    # The new prompt after a refused line: its P carries a count of its own, so the copies
    # fish redraws from its cache are known as repaints.
    printf '\e]133;P;cwd=%s;n=r%s;state=refused;dshpty=%s\a\e]133;D;2;dshpty=%s\a' \
      (string escape --style=url -- $PWD) $__dshpty_refused $__dshpty_nonce $__dshpty_nonce
    set st 2
  end
  printf '\e]133;A;dshpty=%s\a' $__dshpty_nonce
  __dshpty_call $user $st
  printf '\e]133;B;dshpty=%s\a' $__dshpty_nonce
  set -e __dshpty_drawing
end
__dshpty_wrap

# Once per new prompt (a repaint runs fish_prompt again, this event not): the cwd mark,
# which tells a new prompt from a repainted one, and right after it the status: only a D
# there counts (a sourced file can read the nonce and print marks from its prompt).
function __dshpty_new_prompt --on-event fish_prompt
  set -l st $status
  functions fish_prompt | string match -q '*__dshpty_prompt __dshpty_user_prompt_*'; or __dshpty_wrap
  printf '\e]133;P;cwd=%s;dshpty=%s\a\e]133;D;%s;dshpty=%s\a' (string escape --style=url -- $PWD) \
    $__dshpty_nonce $st $__dshpty_nonce
end

function __dshpty_preexec --on-event fish_preexec
  printf '\e]133;C;dshpty=%s\a' $__dshpty_nonce
end

# A line fish would not run. An open block (`for ...` without its `end`): Enter adds a
# line to it, like bash's PS2, and the L mark says so. A syntax error (a bash heredoc):
# fish would keep the line and append whatever is typed next to it (a password too), so
# it is cleared here: the error is shown as fish words it (a parse without running:
# `fish --no-execute`, only on an error), then a new prompt with status 2 whose P says so.
set -g __dshpty_refusals 0
function __dshpty_enter
  set -e __dshpty_refused
  commandline --is-valid
  switch $status
    case 2
      printf '\e]133;L;state=continuation;dshpty=%s\a' $__dshpty_nonce
      commandline -f execute
    case 1
      set -l line (commandline | string collect)
      commandline -r ''
      echo
      set -l fish (status fish-path)
      $fish --no-config --no-execute -c "$line"
      set -g __dshpty_refusals (math $__dshpty_refusals + 1)
      set -g __dshpty_refused $__dshpty_refusals
      commandline -f repaint
    case '*'
      commandline -f execute
  end
end
# Both ends of a line: a multi-line send's inner line breaks reach fish as \n (C-j), which
# fish binds to execute of its own, and its execute keeps a refused line for the next one.
for key in \r \n
  bind $key __dshpty_enter
  bind -M insert $key __dshpty_enter
end

# Line-mode friendly: no bracketed paste.
functions -q __fish_enable_bracketed_paste; and functions -e __fish_enable_bracketed_paste
function __fish_enable_bracketed_paste; end
