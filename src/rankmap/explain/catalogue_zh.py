"""Chinese phrasings of the symptoms and settings the prose signals read (review 33).

Many public threads of this family are written in Chinese, with the decisive fact in the title or
a sentence ("只用了一张卡": only one GPU is used; "hostname 都一样": every host has the same name),
around English logs. Each entry adds alternatives to the English signal of the same id, with the
same supports and the same fact: one authority per rule, in two languages. ``keys`` are
substrings every alternative contains (the prefilter gate, as for every signal): Chinese words,
so that no line of an English log becomes a candidate for them.
"""

from __future__ import annotations

# what a "card" is called: 卡, 显卡, GPU
_CARD = r"(?:卡|显卡|gpu)"
_ONE = r"(?:一|1|单)"
_FEW = r"(?:[2-7]|两|二|三|四|五|六|七)"
# "all / everything ... on card 0"
# the rest of the clause does not say it works (正常 "normal", 没问题 "no problem", 可以 "it can")
_NOT_FINE = r"(?![^。，,.；;\n]{0,12}(?:正常|没问题|没有问题|没有任何问题|可以|能跑|成功))"
_ON_ZERO = r"(?:0\s*号\s*卡|卡\s*0|第一张卡|第\s*0\s*张卡|gpu\s*0|cuda:?0)"

ZH_PHRASES: dict[str, tuple[str, tuple[str, ...]]] = {
    # 只有第一张卡显存上涨 / 显存全堆在0号卡 / 全部跑在卡0上 / 0号卡显存比其他卡高
    "all-on-gpu0": (
        r"只有(?:第一张|0\s*号|一号)?卡(?:的)?显存|(?:全|都|全部)(?:都)?(?:在|跑在|堆在|集中在|"
        r"放在|挤在|加载到|跑到了?|分配到)\s*" + _ON_ZERO + r"|0\s*号卡(?:的)?显存(?:占用)?"
        r"(?:特别|很|比其他卡?|明显)(?:高|大|多)|"
        # 0号卡上有8个进程 ("card 0 holds 8 processes")
        + _ON_ZERO
        + r"\s*上?\s*(?:有|跑了?|挤了?|出现了?)\s*(?:\d+|两|三|四|五|六|七|八|多|好几)\s*个\s*进程",
        ("显存", "都", "全", "进程"),
    ),
    # 显卡占用不均 / 显存不平衡 / 各卡负载不均衡 (English: "unbalanced memory"): work landing on
    # card 0 of every process
    "gpu0-heavier": (
        r"(?:显存|显卡|负载|占用|内存)[^。，,.；;\n]{0,6}不(?:均衡?|平衡)",
        ("不均", "不平衡"),
    ),
    # 还是跑在0号卡上 ("still runs on card 0"), 却用的是0号卡 ("but card 0 is used"); not 报错说0号卡
    # ("the error says card 0": PyTorch names the first visible GPU so under any list)
    "gpu0-named-used": (
        r"(?:还是|仍然|依然|却|一直)[^。，,；;\n]{0,6}(?:跑在|跑到|用的是?|使用|占用|加载到|分配到)\s*"
        r"(?:了\s*)?(?:0\s*号\s*(?:gpu|卡|显卡)|" + _ON_ZERO + r")" + _NOT_FINE,
        ("还是", "仍然", "依然", "却", "一直"),
    ),
    # 2号卡是空的 / 2号卡空闲 / 2号卡上没有进程 ("card 2 is empty / idle / has no process")
    "gpu-seen-idle": (
        r"\d\s*号\s*(?:gpu|卡|显卡)\s*(?:上)?\s*(?:是|还是|一直|都)?\s*(?:空的|空闲|闲置|没有?(?:任何)?(?:占用|进程|使用|"
        r"程序))",
        ("空的", "空闲", "闲置", "没有", "没占用", "没进程", "没使用"),
    ),
    # 只用了一张卡 / 只有一张卡在跑 / 只能用到一张卡 (not 只用一张卡的时候正常: "fine with one card")
    "one-gpu-used": (
        # (张 / 个 / 块: the measure words of a card; 只是 "just")
        r"(?:只|仅)(?:是|能)?(?:用|使用|占用|跑|用到|用上)了?\s*"
        + _ONE
        + r"\s*[张个块]\s*"
        + _CARD
        + _NOT_FINE
        + r"|只有\s*"
        + _ONE
        + r"\s*[张个块]\s*"
        + _CARD
        + r"(?:在(?:跑|用|工作|运行)|有(?:占用|负载))",
        # (个 and 块 only before the card: alone they are on most lines of a Chinese log)
        ("张", "块卡", "块显卡", "块gpu", "块 gpu", "个卡", "个显卡", "个gpu", "个 gpu"),
    ),
    # 只用了两张卡 (the launch started fewer processes than the GPUs it sees)
    "some-gpus-used": (
        r"(?:只|仅)(?:能)?(?:用|使用|占用|跑|用到|用上)了?\s*" + _FEW + r"\s*张" + _CARD,
        ("张",),
    ),
    # hostname 都一样 / 主机名相同
    "same-hostname": (
        r"(?:hostname|主机名)\s*(?:都|全都|全部|完全)?\s*(?:一样|相同|一致|重复)",
        ("hostname", "主机名"),
    ),
    # NODE_RANK 都写成了 0 / node_rank 都是0
    "ranks-duplicated": (
        r"(?:node[_-]rank|machine[_-]rank)\s*(?:都|全都|全部)\s*(?:写成了?|设置?成了?|设为|是|为|填了?)"
        r"\s*0",
        ("都", "全部"),
    ),
    # 每个进程只能看到一张卡 / device_count 都是 1
    "one-gpu-per-proc": (
        r"每个(?:进程|任务|worker|rank)(?:都)?只(?:能)?(?:看到|看见|识别到|识别|有)\s*"
        + _ONE
        + r"\s*张"
        + _CARD
        + r"|device_count\(?\)?\s*(?:都|全)(?:是|为|返回)\s*1",
        ("每个", "device_count"),
    ),
}

# Failure words of a Chinese report (报错: an error is reported; 卡住: it hangs; 不生效: a setting
# has no effect): the gate for a best guess, as the English STRONG_FAIL_KEYS
ZH_FAIL_KEYS = ("报错", "错误", "失败", "卡住", "卡死", "不生效", "无效", "异常", "崩溃", "出错")
