# dshpty's fish integration, read by `fish --init-command 'source ...'` after the user's
# config (rc user) or none (--no-config). It marks every prompt with OSC 133 sequences that
# carry the session's nonce (see the bash integration for the kinds), by wrapping
# fish_prompt: whatever prompt the user defines later is wrapped again before it is drawn.
# Nothing here is exported; history is off by --private.
set -g __dshpty_nonce $DSHPTY_NONCE
set -l rc $DSHPTY_RC
set -e DSHPTY_NONCE
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

function __dshpty_wrap
  functions -e __dshpty_user_prompt
  functions -q fish_prompt; and functions -c fish_prompt __dshpty_user_prompt
  function fish_prompt
    set -l st $status
    printf '\e]133;P;cwd=%s;dshpty=%s\a\e]133;D;%s;dshpty=%s\a\e]133;A;dshpty=%s\a' \
      (string escape --style=url -- $PWD) $__dshpty_nonce $st $__dshpty_nonce $__dshpty_nonce
    __dshpty_status $st
    functions -q __dshpty_user_prompt; and __dshpty_user_prompt
    printf '\e]133;B;dshpty=%s\a' $__dshpty_nonce
  end
end
__dshpty_wrap

function __dshpty_check --on-event fish_prompt
  functions fish_prompt | string match -q '*__dshpty_user_prompt*'; or __dshpty_wrap
end

function __dshpty_preexec --on-event fish_preexec
  printf '\e]133;C;dshpty=%s\a' $__dshpty_nonce
end

# Line-mode friendly: no bracketed paste.
functions -q __fish_enable_bracketed_paste; and functions -e __fish_enable_bracketed_paste
function __fish_enable_bracketed_paste; end
