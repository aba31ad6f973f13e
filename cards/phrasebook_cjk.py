"""The rule tables' rows for Chinese and Japanese: what a person says (it worked, it is broken, not
that, do it, why), read where no word boundary separates the words.

Each table here is appended to its namesake in `cards.phrasebook`, after the rows of the other
languages; a row names its language, and `tests/test_phrasebook.py` runs its hits and misses.
"""

from __future__ import annotations

from memoir.cards.rule_table import Rule, rx

CONFIRMS: tuple[Rule, ...] = (
    Rule("confirms_zh_ja",
         rx(r"(?:可以了|行了|成功了|解决了|搞定了|修好了|能用了|正常了|没问题了|生效了|跑通了|跑起来了|测试通过了|"
            r"動きました|動いた|直りました|直った|解決しました|うまくいきました|うまくいった|成功しました)"),
         ("可以了，谢谢", "问题解决了", "现在能用了", "動きました、ありがとう", "直りました"),
         ("可以吗？", "还是不行", "まだ動きません", "这样可以吗"),
         "Chinese and Japanese confirmations that the answer worked."),
)

UNCONFIRMED: tuple[Rule, ...] = (
    Rule("unconfirmed_zh_ja",
         rx(r"不行|不能|不可以|没用|没有用|还是|仍然|依然|但是|不过|报错|失败|吗\s*[?？]?\s*$|[?？]\s*$|"
            r"まだ|でも|しかし|動きません|エラー|ですか"),
         ("可以了，但是页面是空的", "还是报错", "可以了吗？", "動きました、でもエラーが出ます"),
         ("可以了，谢谢", "動きました"),
         "A 'but', a 'still' or a question takes the confirmation beside it back."),
)

PROBLEM_REPORTS: tuple[Rule, ...] = (
    Rule("problem_zh_ja",
         rx(r"报错|出错|错误|失败|不行|不能用|用不了|无法|打不开|启动不了|运行不了|崩溃|闪退|卡住|卡死|没反应|没有反应|"
            r"异常|不生效|没生效|不工作|"
            r"エラー|失敗|動かない|動きません|起動しない|起動できない|落ちる|表示されない|おかしい"),
         ("启动的时候报错了", "页面打不开", "插件没反应", "ビルドでエラーが出ます", "アプリが起動しない"),
         ("加一个按钮", "ボタンを追加して"),
         "Chinese and Japanese reports that something is broken."),
)

REJECTS: tuple[Rule, ...] = (
    Rule("rejects_zh_ja",
         rx(r"^\W*(?:不对|不是的|错了|いいえ|違う|違います)|还是不行|还是报错|还是一样|仍然(?:不行|报错|失败)|"
            r"依然(?:不行|报错|失败)|不是我(?:要|想要)的|没有解决|没解决|まだ(?:動かない|動きません|エラー)|解決していません"),
         ("不对，我要的是当前窗口", "还是报错", "不是我想要的", "違います、今のウィンドウで", "まだ動きません"),
         ("可以了", "不错，继续", "動きました"),
         "Chinese and Japanese: the user's next words reject the result."),
)

RETRACTS: tuple[Rule, ...] = (
    Rule("retracts_zh_ja",
         rx(r"不是(?:真正的|根本)?原因|并(?:没有|没)(?:解决|修复)|(?:之前|前面|刚才)的(?:修改|修复|改动)(?:是)?"
            r"(?:错误的|错的|多余的|不必要的|没用的)|原因ではな(?:い|かった|く)|(?:前|以前)の(?:修正|変更)は(?:不要|間違い)"),
         ("提交并不是真正的原因", "之前的修改是多余的", "コミットは原因ではなかった"),
         ("原因是缺少索引", "原因はインデックスの欠落でした"),
         "Chinese and Japanese: a later finding that the cause or the fix was something else."),
)

DECISIONS: tuple[Rule, ...] = (
    Rule("choice_zh_ja",
         rx(r"而不是|不要用|别用|总是|永远|始终|一律|统一(?:用|使用)|改用|换成|因为|ではなく|代わりに|常に|必ず|絶対に|なぜなら"),
         ("统一用 pnpm，不要用 npm", "代码里不要用 DRA，因为要按资源命名", "npmではなくpnpmを使う"),
         ("加一个按钮", "ボタンを追加して"),
         "Chinese and Japanese choices: one option over another, or a rule with its reason."),
)

HEDGES: tuple[Rule, ...] = (
    Rule("hedged_zh_ja",
         rx(r"可能|也许|大概|应该是|似乎|好像|估计|我猜|たぶん|おそらく|かもしれ|ようです|みたいです"),
         ("可能是缓存的问题", "たぶんキャッシュの問題です"),
         ("缺少 secret_key_base 配置", "設定が足りません"),
         "A guess in Chinese or Japanese is not what the change proved."),
)

REMEMBERS: tuple[Rule, ...] = (
    Rule("remember_zh_ja",
         rx(r"^\s*(?:请)?(?:记住|记得|别忘了|以后|从现在开始|今后|覚えておいて(?:ください)?|忘れないで(?:ください)?|"
            r"今後は|これからは)[\s:：,，、。]*"),
         ("记住：总是用 pnpm", "以后都用 pnpm", "覚えておいて：常にpnpm"),
         ("我记得上周可以", "你还记得为什么失败吗？"),
         "A Chinese or Japanese request to remember a rule: the user's words are the card."),
)

QUESTIONS: tuple[Rule, ...] = (
    Rule("asks_zh_ja",
         rx(r"^\W*(?:[^\n]{0,12}?)(?:怎么|如何|为什么|为何|是什么|什么是|在哪|哪个|どうやって|どうすれば|なぜ|なんで|何ですか|どこ)"),
         ("迁移怎么加？", "为什么会失败？", "マイグレーションはどうやって追加しますか？"),
         ("加一个按钮", "帮我修一下构建", "ボタンを追加して"),
         "A Chinese or Japanese question asks to know something; a request asks for a change."),
)

GO_AHEAD: tuple[Rule, ...] = (
    Rule("agrees_zh_ja",
         rx(r"^\W*(?:好的|好啊|好吧|好[，,。！!]|行[，,。！!]|可以[的，,。！!]|可以$|没问题|同意|就这样|按(?:这个|你说的)|继续|开始吧|"
            r"はい|ええ|いいです|いいよ|お願いします|了解|進めてください)"),
         ("好的，就这么做", "可以的", "同意，开始吧", "はい、お願いします"),
         ("好像不行", "为什么会失败？", "加一个按钮"),
         "A Chinese or Japanese go-ahead to what the assistant proposed."),
)

WAITS_FOR_USER: tuple[Rule, ...] = (
    Rule("waits_zh_ja",
         rx(r"请告诉我|告诉我(?:你|您)|让我知道|请确认|请选择|(?:你|您)(?:想|希望|需要)我|需要我|是否需要|"
            r"教えてください|お知らせください|確認してください|しますか[？?]"),
         ("请告诉我保留哪一个。", "需要我重新创建吗？", "どちらを残すか教えてください。"),
         ("我已经重命名了文件。", "ファイルを修正しました。"),
         "The assistant handing the turn back in Chinese or Japanese."),
)

UNRELATED: tuple[Rule, ...] = (
    Rule("moves_on_zh_ja",
         rx(r"^\W*(?:另外|另一个问题|新问题|换个问题|还有一个问题|其他问题|別の(?:問題|質問)|もう一つ|ところで)"),
         ("另外，登录也失败了", "もう一つ、ログインが失敗します"),
         ("还是不行", "まだ動きません"),
         "The user's next words open a new problem, in Chinese or Japanese."),
)
