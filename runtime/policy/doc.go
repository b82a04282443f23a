// Package policy decides which tool calls the agent may make: allow, deny
// or requireApproval, with the layer and rule that decided and a reason;
// and it keeps the approvals people grant in chat (Store). It knows no
// tool and no platform: tools are names, people are "channel:userId"
// identities, chats are chat keys.
//
// # Rules
//
// A rule names tools by a glob, optionally followed by a glob for the
// tool's command-like argument in parentheses, as in Claude Code:
//
//	exec_shell              every call of exec_shell
//	mcp.github.*            every tool of the github MCP server
//	exec_shell(git status*) exec_shell running "git status", "git status -s", ...
//	exec_shell(make test)   exactly "make test"
//
// In globs * matches any run of characters (also / and blanks) and ? one
// character; everything else is literal, and there is no escape. Arguments
// and patterns are compared after trimming and collapsing blanks. An
// argument pattern only matches calls that have an argument (Call.Arg),
// which the caller sets for command-like tools only (exec_shell).
//
// Command lines are matched safely: an allow
// pattern must match every part between shell control operators (; & |
// && || newline), so "git status*" does not allow "git status; rm -rf /",
// "git status && x" or "git status | sh"; a command with command
// substitution ($( or a backtick), a redirection (< or >), parameter
// expansion ($ outside single quotes) or brace expansion is allowed only
// by a rule without parentheses. Allow patterns are matched against each
// part with quotes removed and its paths cleaned lexically ("./docs//a.md"
// is "docs/a.md"), and a wildcard never matches a ".." path segment: "cat
// docs/*" allows "cat docs/a.md" but not "cat docs/../.env", however the
// ".." is quoted or globbed ("docs/'..'", "docs/.?"), and not "cat
// docs/x/../a.md" either (".." is never cleaned away, as docs/x may be a
// symlink). Only a pattern that spells ".." out matches it: "cat
// ../shared/*" allows "cat ../shared/a.md", not "cat ../shared/../x".
//
// Deny and requireApproval patterns match the whole line or any part of
// it, also inside substitutions, with quotes removed or paths cleaned
// (path.Clean), and from the start of any word or path segment: "rm *"
// refuses "git status; sudo rm -rf /" and "A=1 /bin/rm -rf /", and "cat
// /etc/shadow" refuses "cat //etc/./shadow". They match the command as
// written, not what a program does with it: an allowed "sh -c", "eval",
// "python -c", "xargs" or "find -exec" can run a denied command in a string
// no pattern sees, and allowing "git *" allows whatever git can be told to
// do (aliases, -c options, hooks): allow narrowly.
//
// A command word that is not a literal ("$x", "${x}", "$(echo rm)", a
// backtick, a glob like "/bin/r?", a brace expansion "r{m,}") is refused
// whatever the rules say, even under a rule without parentheses: it could
// be any command, so no deny rule could be checked against it. So is a
// command line that does not parse (an unterminated quote). Assignments
// ("A=1") and redirections before a command word are skipped, however
// many.
//
// # Layers and verdicts
//
// Rules come in layers, from low to high: global (the tools object of
// ship.json), role (the roles the caller's identity belongs to, taken
// together as one layer), chat (every "chats" entry whose glob matches the
// chat key, taken together) and request (a Narrowing sent with an
// /api/execute or /api/send body, which has no allow list). Each layer has
// allow, deny and requireApproval lists. Decide resolves a call so:
//
//  1. If a deny rule of any layer matches the call, it is denied. Deny wins
//     everywhere: no layer can allow what another denies.
//  2. Otherwise each part of the command (the whole call, for tools without
//     an argument) must be allowed by an allow rule or by the tool's
//     default; the highest layer with a matching allow or requireApproval
//     rule decides, and requireApproval beats allow within a layer. So a
//     chat's requireApproval turns a role's allow into RequireApproval,
//     while a role's allow lifts a global requireApproval.
//  3. requireApproval never allows by itself: a call nothing allows (and
//     whose default is Deny) stays denied, whatever asks for approval. This
//     makes requireApproval a pure restriction, safe to add anywhere: a
//     chat rule "requireApproval: exec_shell" does not let everyone in the
//     chat ask for the shell. To let anyone run a tool with approval, allow
//     it and require approval for it.
//  4. Where no rule decides, the tool's default, given by the caller,
//     applies (for example Allow for chat_send, Deny for exec_shell and MCP
//     tools).
//
// The request layer can only narrow: it adds deny rules and
// requireApproval rules (which only ever turn an Allow into
// RequireApproval). Offered tells whether a tool is worth offering to the
// model at all: not when a deny rule names it without parentheses, nor when
// no allow rule names it and its default is Deny.
//
// # Configuration
//
// The tools object of ship.json; unknown fields are errors that name the
// field. Roles map identities ("telegram:123456", "feishu:ou_x", "qq:ABCD";
// a trailing * matches many, like "api:*") to rules; a role with
// "approve": true may approve. No glob matches AnonymousAPI
// ("api:anonymous", every unauthenticated API caller): a role takes it in
// only by that exact member. Chats are keyed by a chat-key glob. TTLs are
// in seconds; a grant lets its call run grantMaxUses times.
//
// A worked example: anyone may chat; only admins may run the shell, "git
// ..." and "make test", and in groups only after approval; nobody may run
// rm:
//
//	{
//	  "allow": ["chat_*"],
//	  "deny": ["exec_shell(rm *)"],
//	  "roles": {
//	    "admin": {
//	      "members": ["telegram:123456", "feishu:ou_abc", "api:*"],
//	      "allow": ["exec_shell(git *)", "exec_shell(make test)"],
//	      "approve": true
//	    }
//	  },
//	  "chats": {
//	    "telegram:chat:-100*": {"requireApproval": ["exec_shell"]}
//	  },
//	  "approvalTTLSeconds": 600,
//	  "grantTTLSeconds": 600,
//	  "grantMaxUses": 1
//	}
//
// With exec_shell's default Deny: a member runs nothing in the shell
// (default); telegram:123456 runs "git status" in a private chat (role
// admin allows it) and needs approval in a group whose key starts with
// telegram:chat:-100 (the chat layer is higher than the role layer);
// "make test && rm -rf build" is denied for everyone (global deny matches a
// part); "git log > f" is denied (a redirection is never allowed by an
// argument pattern).
//
// # Approvals and grants
//
// When Decide says RequireApproval, the caller first tries
// Store.UseGrant for the exact call; if no grant covers it, it calls
// Store.Request and tells the chat the code. An approver answers with the
// code (Store.Approve or Store.Deny, in the same chat); an approval creates
// a grant for exactly that call (chat, tool and arguments), which
// UseGrant consumes when the call is made again. Store.Expire, called now
// and then, returns each approval that ran out once, to report it. A grant
// never lifts a Deny.
package policy
