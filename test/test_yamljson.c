/* test_yamljson.c -- YAML -> JSON: core-schema scalars, multi-doc, aliases, and the bounds (depth, node budget, duplicate keys, bombs). */
#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "lib/yamljson.h"

typedef struct {
    const char *yaml;
    const char *json;   /* the array of documents */
} ok_case;

static const ok_case ok_cases[] = {
    {"", "[]"},
    {"---\n", "[null]"},
    {"a: 1\n", "[{\"a\":1}]"},
    {"a: -7\nb: +3\nc: 0042\n", "[{\"a\":-7,\"b\":3,\"c\":42}]"},
    {"a: 1.5\nb: .5\nc: 1e3\nd: -2.5E-1\n", "[{\"a\":1.5,\"b\":0.5,\"c\":1000.0,\"d\":-0.25}]"},
    {"a: true\nb: True\nc: TRUE\nd: false\ne: False\nf: FALSE\n",
     "[{\"a\":true,\"b\":true,\"c\":true,\"d\":false,\"e\":false,\"f\":false}]"},
    {"a: null\nb: ~\nc:\nd: Null\ne: NULL\n",
     "[{\"a\":null,\"b\":null,\"c\":null,\"d\":null,\"e\":null}]"},
    /* YAML 1.1 booleans and Kubernetes quantities stay strings */
    {"a: yes\nb: no\nc: on\nd: off\ne: 4Gi\nf: 500m\ng: 1_000\nh: 1e\ni: 1.2.3\n",
     "[{\"a\":\"yes\",\"b\":\"no\",\"c\":\"on\",\"d\":\"off\",\"e\":\"4Gi\",\"f\":\"500m\","
     "\"g\":\"1_000\",\"h\":\"1e\",\"i\":\"1.2.3\"}]"},
    /* quoted and tagged scalars stay strings */
    {"a: \"1\"\nb: 'true'\nc: \"null\"\nd: ''\ne: !!str 5\nf: \"4096\"\n",
     "[{\"a\":\"1\",\"b\":\"true\",\"c\":\"null\",\"d\":\"\",\"e\":\"5\",\"f\":\"4096\"}]"},
    /* JSON is YAML */
    {"{\"a\": [1, 2, {\"b\": null}], \"c\": \"x\"}", "[{\"a\":[1,2,{\"b\":null}],\"c\":\"x\"}]"},
    {"- a\n- [b, {c: d}]\n-\n", "[[\"a\",[\"b\",{\"c\":\"d\"}],null]]"},
    {"a: >-\n  folded\n  text\nb: |\n  lit\n", "[{\"a\":\"folded text\",\"b\":\"lit\\n\"}]"},
    /* multi-document streams */
    {"---\na: 1\n---\nb: 2\n...\n", "[{\"a\":1},{\"b\":2}]"},
    {"a: 1\n---\n---\nb: 2\n", "[{\"a\":1},null,{\"b\":2}]"},
    /* non-string keys keep their text */
    {"1: a\ntrue: b\n", "[{\"1\":\"a\",\"true\":\"b\"}]"},
    /* anchors and aliases */
    {"a: &x [1, 2]\nb: *x\n", "[{\"a\":[1,2],\"b\":[1,2]}]"},
    {"a: &s hello\nb: [*s, *s]\n", "[{\"a\":\"hello\",\"b\":[\"hello\",\"hello\"]}]"},
    /* merge key, with the merged keys not overriding explicit ones */
    {"base: &b {x: 1, y: 2}\nd:\n  y: 3\n  <<: *b\n", "[{\"base\":{\"x\":1,\"y\":2},\"d\":{\"x\":1,\"y\":3}}]"},
};

START_TEST(parses)
{
    const ok_case *c = &ok_cases[_i];
    gp_err err = {{0}};
    json_t *docs = yamljson_parse(c->yaml, strlen(c->yaml), &err);
    ck_assert_msg(docs != NULL, "case %d: %s", _i, err.msg);
    json_t *want = json_loads(c->json, JSON_DECODE_ANY, NULL);
    ck_assert_ptr_nonnull(want);
    char *got = json_dumps(docs, JSON_COMPACT | JSON_ENCODE_ANY);
    ck_assert_msg(json_equal(docs, want), "case %d: got %s, want %s", _i, got, c->json);
    free(got);
    json_decref(want);
    json_decref(docs);
}
END_TEST

/* Aliases are copies: changing one does not change the other. */
START_TEST(aliases_are_copies)
{
    const char *y = "a: &x {k: 1}\nb: *x\n";
    gp_err err;
    json_t *docs = yamljson_parse(y, strlen(y), &err);
    ck_assert_ptr_nonnull(docs);
    json_t *a = json_object_get(json_array_get(docs, 0), "a");
    json_t *b = json_object_get(json_array_get(docs, 0), "b");
    json_object_set_new(a, "k", json_integer(2));
    ck_assert_int_eq(json_integer_value(json_object_get(b, "k")), 1);
    json_decref(docs);
}
END_TEST

typedef struct {
    const char *yaml;
    const char *msg;   /* "line:column: what" */
} bad_case;

static const bad_case bad_cases[] = {
    {"a: 1\na: 2\n", "2:1: duplicate mapping key"},
    {"x:\n  a: 1\n  b: 2\n  a: 3\n", "4:3: duplicate mapping key"},
    {"{a: 1, a: 1}", "1:8: duplicate mapping key"},
    {"1: a\n\"1\": b\n", "2:1: duplicate mapping key"},
    {"a: [1, 2\n", "did not find expected ',' or ']'"},
    {"a: *nope\n", "1:4: alias to an unknown anchor"},
    {"a: b: c\n", "1:5: mapping values are not allowed"},
    {"a: \"unterminated\n", "found unexpected end of stream"},
    {"- a\nb: c\n", "2:1:"},
    {"a: \t\"x\"\n\t- y\n", ":"},
    {"\xff\xfe" "a: 1\n", ":"},                 /* not UTF-8 */
    {"a: \"\xc3\x28\"\n", ":"},                  /* invalid UTF-8 sequence */
};

START_TEST(rejects)
{
    const bad_case *c = &bad_cases[_i];
    gp_err err = {{0}};
    json_t *docs = yamljson_parse(c->yaml, strlen(c->yaml), &err);
    ck_assert_msg(docs == NULL, "case %d accepted", _i);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "case %d: message \"%s\" lacks \"%s\"", _i,
                  err.msg, c->msg);
    ck_assert_msg(err.msg[0] >= '1' && err.msg[0] <= '9', "case %d: no line: %s", _i, err.msg);
}
END_TEST

/* --------------------------------------------------------- bounds -- */

static char *nested(int depth, bool flow)
{
    gp_buf b;
    gp_buf_init(&b, 1 << 20);
    for (int i = 0; i < depth; i++) {
        if (flow)
            ck_assert(gp_buf_append(&b, "[", 1) == 0);
        else
            ck_assert(gp_buf_printf(&b, "%*sk%d:\n", i * 2, "", i) == 0);
    }
    if (flow) {
        ck_assert(gp_buf_append(&b, "x", 1) == 0);
        for (int i = 0; i < depth; i++)
            ck_assert(gp_buf_append(&b, "]", 1) == 0);
    } else {
        ck_assert(gp_buf_printf(&b, "%*sx\n", depth * 2, "") == 0);
    }
    return b.data;
}

typedef struct {
    int depth;
    bool flow;
    bool ok;
} depth_case;

static const depth_case depth_cases[] = {
    {10, true, true},   {64, true, true},   {65, true, false},  {100, true, false},
    {10, false, true},  {64, false, true},  {65, false, false}, {100, false, false},
    {1000, true, false},
};

START_TEST(depth_limit)
{
    const depth_case *c = &depth_cases[_i];
    char *y = nested(c->depth, c->flow);
    gp_err err = {{0}};
    json_t *docs = yamljson_parse(y, strlen(y), &err);
    if (c->ok) {
        ck_assert_msg(docs != NULL, "depth %d: %s", c->depth, err.msg);
    } else {
        ck_assert_msg(docs == NULL, "depth %d accepted", c->depth);
        ck_assert_msg(strstr(err.msg, "nesting deeper than 64 levels"), "%s", err.msg);
    }
    json_decref(docs);
    free(y);
}
END_TEST

/* Billion laughs: nine levels of ten aliases would be 10^9 nodes. */
static char *laughs(int levels, int fan)
{
    gp_buf b;
    gp_buf_init(&b, 1 << 20);
    ck_assert(gp_buf_printf(&b, "l0: &l0 lol\n") == 0);
    for (int l = 1; l <= levels; l++) {
        ck_assert(gp_buf_printf(&b, "l%d: &l%d [", l, l) == 0);
        for (int k = 0; k < fan; k++)
            ck_assert(gp_buf_printf(&b, "%s*l%d", k ? ", " : "", l - 1) == 0);
        ck_assert(gp_buf_printf(&b, "]\n") == 0);
    }
    return b.data;
}

START_TEST(billion_laughs)
{
    char *y = laughs(9, 10);
    gp_err err = {{0}};
    json_t *docs = yamljson_parse(y, strlen(y), &err);
    ck_assert_msg(docs == NULL, "billion laughs accepted");
    ck_assert_msg(strstr(err.msg, "aliases expand past the size limit") ||
                      strstr(err.msg, "document too large"), "%s", err.msg);
    free(y);
    /* a small expansion is fine: 4 levels x 4 = 256 leaves */
    y = laughs(4, 4);
    docs = yamljson_parse(y, strlen(y), &err);
    ck_assert_msg(docs != NULL, "%s", err.msg);
    const json_t *l4 = json_object_get(json_array_get(docs, 0), "l4");
    ck_assert_uint_eq(json_array_size(l4), 4);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(json_array_get(
                         json_array_get(l4, 3), 3), 3), 3)), "lol");
    json_decref(docs);
    free(y);
}
END_TEST

/* Every prefix of a real file parses or fails with a message: never a crash. */
START_TEST(truncated_at_every_offset)
{
    size_t len;
    gp_err err = {{0}};
    char *text = gp_read_file("examples/cluster.yaml", 1 << 20, &len, &err);
    ck_assert_msg(text != NULL, "%s", err.msg);
    int ok = 0, bad = 0;
    for (size_t k = 0; k <= len; k += 1) {
        err.msg[0] = '\0';
        json_t *docs = yamljson_parse(text, k, &err);
        if (docs) {
            ok++;
            ck_assert(json_is_array(docs));
        } else {
            bad++;
            ck_assert_msg(err.msg[0] != '\0', "prefix %zu: NULL without a message", k);
        }
        json_decref(docs);
    }
    ck_assert_int_gt(ok, 0);
    ck_assert_int_gt(bad, 0);
    free(text);
}
END_TEST

START_TEST(load_file)
{
    gp_err err = {{0}};
    json_t *docs = yamljson_load_file("examples/cluster.yaml", &err);
    ck_assert_msg(docs != NULL, "%s", err.msg);
    ck_assert_uint_eq(json_array_size(docs), 1);
    const json_t *list = json_array_get(docs, 0);
    ck_assert_str_eq(json_string_value(json_object_get(list, "kind")), "List");
    ck_assert_uint_eq(json_array_size(json_object_get(list, "items")), 6);
    json_decref(docs);

    ck_assert_ptr_null(yamljson_load_file("test/fixtures/decode/no-such-file.yaml", &err));
    ck_assert_msg(strstr(err.msg, "test/fixtures/decode/no-such-file.yaml: "), "%s", err.msg);

}
END_TEST

/* ---------------------------------------------------- bugs (lead) -- */

/* BUG: the depth bound is checked on YAML events only; an alias inserts a
 * copy of its anchor at any depth, so stacking anchors gives trees far deeper
 * than 64 (here 5 x 30 = 150 levels, and ~16000 within the node budget), which
 * recursive consumers (json_deep_copy, json_decref, json_dumps, count_nodes)
 * walk on the stack. Proposed fix: when expanding an alias at `depth`, reject
 * it if depth + depth_of(anchor) > YAMLJSON_MAX_DEPTH (store each anchor's
 * depth with it in the strmap). */
START_TEST(bug_alias_depth)
{
    gp_buf b;
    gp_buf_init(&b, 1 << 20);
    ck_assert(gp_buf_printf(&b, "l0: &l0 x\n") == 0);
    for (int l = 1; l <= 5; l++) {
        ck_assert(gp_buf_printf(&b, "l%d: &l%d %.30s*l%d%.30s\n", l, l,
                                "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", l - 1,
                                "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]") == 0);
    }
    gp_err err = {{0}};
    json_t *docs = yamljson_parse(b.data, b.len, &err);
    ck_assert_msg(docs == NULL, "aliases built a tree deeper than %d levels", YAMLJSON_MAX_DEPTH);
    ck_assert_msg(strstr(err.msg, "deeper") != NULL, "%s", err.msg);
    gp_buf_free(&b);
}
END_TEST

/* BUG: the budget counts nodes, not bytes: one 1 MiB string aliased 96 times
 * expands a 1 MiB file into 96 MiB of copies (json_deep_copy duplicates
 * strings), more than the 64 MiB a file may have. Scaled up (1 MiB x 2000 aliases,
 * a 1 MB file) it is 2 GiB; under a 1 GB address-space limit the parse ran 14 s
 * and returned NULL with err->msg never set (jansson's NULL from json_deep_copy
 * is not reported). Proposed fix: count the bytes of scalars copied by an alias
 * against a byte budget (e.g. YAMLJSON_MAX_FILE), or share immutable scalars
 * with json_incref instead of copying; and set err when a copy returns NULL. */
START_TEST(bug_alias_byte_bomb)
{
    size_t slen = 1u << 20;
    gp_buf b;
    gp_buf_init(&b, 4u << 20);
    ck_assert(gp_buf_printf(&b, "a: &a \"") == 0);
    char *big = xmalloc(slen);
    memset(big, 'x', slen);
    ck_assert(gp_buf_append(&b, big, slen) == 0);
    free(big);
    ck_assert(gp_buf_printf(&b, "\"\nb: [") == 0);
    for (int i = 0; i < 96; i++)
        ck_assert(gp_buf_printf(&b, "%s*a", i ? "," : "") == 0);
    ck_assert(gp_buf_printf(&b, "]\n") == 0);
    gp_err err = {{0}};
    json_t *docs = yamljson_parse(b.data, b.len, &err);
    ck_assert_msg(docs == NULL, "a %zu-byte file expanded to 96 MiB", b.len);
    ck_assert_msg(err.msg[0] != '\0', "no message");
    gp_buf_free(&b);
}
END_TEST

/* BUG: a merge key followed by an explicit key that overrides a merged one
 * (the usual YAML idiom) fails as a duplicate key: `<<` is applied at once
 * with json_object_update_missing, then `y` is seen as already present.
 * Proposed fix: remember keys set explicitly and let them replace merged
 * ones (or collect merges and apply them at the end of the mapping). */
START_TEST(bug_merge_then_override)
{
    const char *y = "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n";
    gp_err err = {{0}};
    json_t *docs = yamljson_parse(y, strlen(y), &err);
    ck_assert_msg(docs != NULL, "%s", err.msg);
    const json_t *d = json_object_get(json_array_get(docs, 0), "d");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "x")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "y")), 3);
    json_decref(docs);
}
END_TEST

Suite *suite_yamljson(void);
Suite *suite_yamljson(void)
{
    Suite *s = suite_create("yamljson");
    TCase *t = tcase_create("parse");
    tcase_set_timeout(t, 20);
    tcase_add_loop_test(t, parses, 0, (int)GP_ARRAY_LEN(ok_cases));
    tcase_add_test(t, aliases_are_copies);
    tcase_add_loop_test(t, rejects, 0, (int)GP_ARRAY_LEN(bad_cases));
    tcase_add_loop_test(t, depth_limit, 0, (int)GP_ARRAY_LEN(depth_cases));
    tcase_add_test(t, billion_laughs);
    tcase_add_test(t, truncated_at_every_offset);
    tcase_add_test(t, load_file);
    suite_add_tcase(s, t);
    TCase *b = tcase_create("bugs");
    tcase_set_timeout(b, 20);
    tcase_add_test(b, bug_alias_depth);
    tcase_add_test(b, bug_alias_byte_bomb);
    tcase_add_test(b, bug_merge_then_override);
    suite_add_tcase(s, b);
    return s;
}
